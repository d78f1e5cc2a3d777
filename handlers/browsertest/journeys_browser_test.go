package browsertest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// browserSignIn signs in through the login form.
func browserSignIn(t *testing.T, ctx context.Context, base, email, password string) {
	t.Helper()
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, password, chromedp.ByQuery),
		chromedp.Submit(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dashboard-greeting"]`, chromedp.ByQuery),
	))
}

// TestPasswordResetInBrowser: forgot password, code by email, new password,
// sign in with it.
func TestPasswordResetInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, email := b.SignedUpUser(t, "forgetful")
	before := len(b.WaitMessages(t, email, 2)) // code, sign-in notice
	ctx := testenv.Browser(t)

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/login"),
		chromedp.Click(`[data-testid="forgot-password"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="reset-request-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.Submit(`[data-testid="reset-request-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="reset-confirm-form"]`, chromedp.ByQuery),
	))
	msgs := b.WaitMessages(t, email, before+1)
	reset := msgs[len(msgs)-1]
	require.True(t, strings.HasPrefix(reset.Subject, "Reset your KubeBYON password"), reset.Subject)

	var flash string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#code`, handlerstest.CodeFrom(t, reset), chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "the new password", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="reset-confirm-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
	))
	require.Contains(t, flash, "Your password was changed")
	browserSignIn(t, ctx, b.Server.URL, email, "the new password")
}

// TestNotificationPreferencesInBrowser turns the new sign-in email off; the
// next sign-in sends none.
func TestNotificationPreferencesInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, email := b.SignedUpUser(t, "quiet")
	b.WaitMessages(t, email, 2) // code, sign-in notice
	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, email, "password of quiet")
	b.WaitMessages(t, email, 3)

	box := `[data-testid="pref.security_sign_in.email"]`
	var checked bool
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/settings/notifications"),
		chromedp.WaitVisible(`[data-testid="notifications-form"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('`+box+`').checked`, &checked),
	))
	require.True(t, checked, "security emails are on by default")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(box, chromedp.ByQuery),
		chromedp.Submit(`[data-testid="notifications-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Navigate(b.Server.URL+"/settings/notifications"),
		chromedp.WaitVisible(`[data-testid="notifications-form"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('`+box+`').checked`, &checked),
	))
	require.False(t, checked, "the choice was saved")

	other := b.SignIn(t, email, "password of quiet")
	require.True(t, other.SignedIn())
	require.Equal(t, 2, b.EmailJobs(t, email, "NewSignIn"), "no new sign-in email after turning it off")
}

// TestActivityInBrowser: an admin filters the audit stream.
func TestActivityInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, adminEmail := b.SignedUpAdmin(t, "auditor")
	_, userEmail := b.SignedUpUser(t, "audited")
	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, adminEmail, "password of auditor")

	var rows string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/admin/activity"),
		chromedp.WaitVisible(`[data-testid="activity-rows"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#actor`, userEmail, chromedp.ByQuery),
		chromedp.SendKeys(`#action`, "user.verify_email", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="activity-filter"]`, chromedp.ByQuery),
		// The filtered page, not the old one: its input carries the filter
		// as an attribute, where typing set only the property.
		chromedp.WaitVisible(`#action[value="user.verify_email"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="activity-rows"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="activity-rows"]`, &rows, chromedp.ByQuery),
	))
	require.Contains(t, rows, userEmail)
	require.Contains(t, rows, "user.verify_email")
	require.NotContains(t, rows, adminEmail)
	require.NotContains(t, rows, "user.sign_in")
}
