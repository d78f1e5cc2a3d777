package browsertest_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAdminMailInBrowser: an admin opens Email, types a mail server, sends
// a test email through it before saving, then saves it.
func TestAdminMailInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, adminEmail := b.SignedUpAdmin(t, "mailer")
	auth := testenv.MailAuth(t)
	u, err := url.Parse(auth.SMTPURL)
	require.NoError(t, err)
	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, adminEmail, "password of mailer")

	var sent, source, flash string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/admin/users"),
		chromedp.Click(`[data-testid="admin-nav-mail"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="mail-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#host`, u.Hostname(), chromedp.ByQuery),
		chromedp.SendKeys(`#port`, u.Port(), chromedp.ByQuery),
		chromedp.SetValue(`#tls`, "none", chromedp.ByQuery),
		chromedp.SendKeys(`#username`, auth.Username, chromedp.ByQuery),
		chromedp.SendKeys(`#smtpPassword`, auth.Password, chromedp.ByQuery),
		chromedp.Click(`[data-testid="mail-test-send"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="mail-test-sent"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="mail-test-sent"]`, &sent, chromedp.ByQuery),
	))
	require.Contains(t, sent, "Test email sent to "+adminEmail)
	auth.WaitMessages(t, adminEmail, 1)

	// The password is not shown back: typed again, with the admin's own.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#smtpPassword`, auth.Password, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "password of mailer", chromedp.ByQuery),
		chromedp.Click(`[data-testid="mail-save"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.AttributeValue(`[data-testid="mail-source"]`, "data-source", &source, nil, chromedp.ByQuery),
	))
	require.Equal(t, "Email settings saved.", strings.TrimSpace(flash))
	require.Equal(t, "settings", source)
}
