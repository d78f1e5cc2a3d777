package browsertest_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAdminPlansInBrowser: on a phone's screen, an admin goes to Plans
// from the admin navigation, fills in a new plan and lands on its page;
// neither page is wider than the screen.
func TestAdminPlansInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, email := b.SignedUpAdmin(t, "planner")
	ctx := testenv.Browser(t)
	require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(390, 900)))
	browserSignIn(t, ctx, b.Server.URL, email, "password of planner")

	var listOut, pageOut []string
	var flash, over string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/admin/users"),
		// On a phone the navigation is a drawer, opened by the top bar\'s button.
		chromedp.Click(`[data-testid="nav-toggle"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="admin-nav-plans"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="plan-new-form"]`, chromedp.ByQuery),
		chromedp.Evaluate(overflowing, &listOut),
		chromedp.SetValue(`#name`, "Team", chromedp.ByQuery),
		chromedp.SetValue(`#name_zh`, "团队版", chromedp.ByQuery),
		chromedp.SetValue(`#max_clusters`, "20", chromedp.ByQuery),
		chromedp.SetValue(`#currency`, "CNY", chromedp.ByQuery),
		chromedp.SetValue(`#price_monthly`, "199.9", chromedp.ByQuery),
		chromedp.Click(`[data-testid="plan-create"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="plan-form"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.Text(`[data-testid="plan-over"]`, &over, chromedp.ByQuery),
		chromedp.Evaluate(overflowing, &pageOut),
	))
	require.Contains(t, flash, "Plan created.")
	require.Contains(t, over, "None of the organizations on this plan is over its limits.")
	require.Empty(t, listOut, "the plans page at 390px")
	require.Empty(t, pageOut, "a plan's page at 390px")
	var monthly int64
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT price_monthly FROM plans WHERE name = 'Team' AND currency = 'CNY' AND max_clusters = 20`).Scan(&monthly))
	require.Equal(t, int64(19990), monthly)
}
