package browsertest_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestInvitationInBrowser: the admin makes sign-up invite-only and invites
// an address; the email arrives with a link that, opened in another
// browser, offers the form for that address and makes the account.
func TestInvitationInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, adminEmail := b.SignedUpAdmin(t, "browserinviter")
	invited := handlerstest.UniqueEmail("browserinvited")
	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, adminEmail, "password of browserinviter")

	var flash, state string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/admin/settings"),
		chromedp.Click(`[data-testid="admin-settings-nav"] a[href="/admin/settings/sign-up"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="signup-policy-form"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="signup-policy-invite_only"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="signup-policy-save"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
	))
	require.Equal(t, "Sign-up settings saved.", strings.TrimSpace(flash))

	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#email`, invited, chromedp.ByQuery),
		chromedp.Click(`[data-testid="invitation-send"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="invitation-row"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.AttributeValue(`[data-testid="invitation-row"]`, "data-state", &state, nil, chromedp.ByQuery),
	))
	require.Equal(t, "Invitation sent.", strings.TrimSpace(flash))
	require.Equal(t, "pending", state)

	link := b.InvitationLink(t, invited, 1)
	guest := testenv.Browser(t)
	var email, greeting, closed string
	require.NoError(t, chromedp.Run(guest,
		// Without the link, sign-up is closed to the guest.
		chromedp.Navigate(b.Server.URL+"/signup"),
		chromedp.WaitVisible(`[data-testid="signup-closed"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="signup-closed"]`, &closed, chromedp.ByQuery),
		chromedp.Navigate(link),
		chromedp.WaitVisible(`[data-testid="signup-form"]`, chromedp.ByQuery),
		chromedp.Value(`[data-testid="signup-invited-email"]`, &email, chromedp.ByQuery),
		chromedp.SendKeys(`#name`, "Invited Person", chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "password of invited", chromedp.ByQuery),
		chromedp.Click(`[data-testid="signup-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dashboard-greeting"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="dashboard-greeting"]`, &greeting, chromedp.ByQuery),
	))
	require.Contains(t, closed, "Sign-up is by invitation only.")
	require.Equal(t, invited, email)
	require.Equal(t, "Welcome, Invited Person", strings.TrimSpace(greeting))
	require.True(t, b.Account(t, invited).Verified)

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(`[data-testid="invitation-row"]`, chromedp.ByQuery),
		chromedp.AttributeValue(`[data-testid="invitation-row"]`, "data-state", &state, nil, chromedp.ByQuery),
	))
	require.Equal(t, "accepted", state)
}
