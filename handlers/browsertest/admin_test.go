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

// TestAdminDisablesUserInBrowser is the admin journey: find a user with the
// search box, open the account, disable it with the password.
func TestAdminDisablesUserInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, adminEmail := b.SignedUpAdmin(t, "chief")
	_, victimEmail := b.SignedUpUser(t, "target")
	_, bystanderEmail := b.SignedUpUser(t, "bystander")
	ctx := testenv.Browser(t)

	var location, status, flash string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/login"),
		chromedp.WaitVisible(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, adminEmail, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "password of chief", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dashboard-greeting"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="nav-admin"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="admin-checklist"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="admin-nav-users"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="admin-user-search-q"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="admin-user-`+bystanderEmail+`"]`, chromedp.ByQuery),
		// Typing searches as htmx: the bystander goes, with no page load.
		chromedp.Evaluate(`window.notReloaded = true`, nil),
		chromedp.SendKeys(`[data-testid="admin-user-search-q"]`, "TARGET-", chromedp.ByQuery),
		chromedp.WaitNotPresent(`[data-testid="admin-user-`+bystanderEmail+`"]`, chromedp.ByQuery),
		chromedp.Evaluate(`location.pathname + location.search`, &location),
	))
	var notReloaded bool
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.notReloaded === true`, &notReloaded)))
	require.True(t, notReloaded, "the search ran without a page load")
	require.Equal(t, "/admin/users?q=TARGET-", location, "the search is in the address bar")

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`[data-testid="admin-user-`+victimEmail+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="admin-form-disable"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="admin-user-status"]`, &status, chromedp.ByQuery),
	))
	require.Equal(t, "Active", strings.TrimSpace(status))

	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#confirm-disable`, "password of chief", chromedp.ByQuery),
		chromedp.Click(`[data-testid="admin-disable"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.Text(`[data-testid="admin-user-status"]`, &status, chromedp.ByQuery),
	))
	require.Equal(t, "The account is disabled and signed out everywhere.", flash)
	require.Equal(t, "Disabled", strings.TrimSpace(status))
	var disabled bool
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT disabled_at IS NOT NULL FROM users WHERE email = $1", victimEmail).Scan(&disabled))
	require.True(t, disabled)
}
