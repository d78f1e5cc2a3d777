package browsertest_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAdminOrderMarkPaidInBrowser: on a phone's screen, an admin goes to
// Orders from the admin navigation, opens the pending order, types the
// payment's reference, marks it paid and sees it paid; no page of
// billing is wider than the screen.
func TestAdminOrderMarkPaidInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	w := handlerstest.NewBillingWorld(t, b, "order-browser-admin")
	_, u, o := w.Order(t, b, "order-browser-user")
	ctx := testenv.Browser(t)
	require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(390, 900)))
	browserSignIn(t, ctx, b.Server.URL, w.AdminEmail, "password of order-browser-admin")

	var listOut, pageOut []string
	var flash, status string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/admin/users"),
		// On a phone the navigation is a drawer, opened by the top bar\'s button.
		chromedp.Click(`[data-testid="nav-toggle"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="admin-nav-orders"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="orders-table"]`, chromedp.ByQuery),
		chromedp.Evaluate(overflowing, &listOut),
		chromedp.Click(`[data-testid="order-link-`+o.Number+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="order-paid-form"]`, chromedp.ByQuery),
		chromedp.Evaluate(overflowing, &pageOut),
		chromedp.SendKeys(`#reference`, "WIRE-42", chromedp.ByQuery),
		chromedp.Click(`[data-testid="order-mark-paid"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.Text(`[data-testid="order-status"]`, &status, chromedp.ByQuery),
	))
	require.Contains(t, flash, "Order marked paid.")
	require.Contains(t, status, "paid")
	require.Empty(t, listOut, "the orders page at 390px")
	require.Empty(t, pageOut, "an order's page at 390px")

	// The overview and the user's subscription fit too.
	var billingOut, userOut []string
	require.NoError(t, chromedp.Run(ctx,
		// On a phone the navigation is a drawer, opened by the top bar\'s button.
		chromedp.Click(`[data-testid="nav-toggle"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="admin-nav-billing"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="billing-settings-form"]`, chromedp.ByQuery),
		chromedp.Evaluate(overflowing, &billingOut),
		chromedp.Navigate(b.Server.URL+fmt.Sprintf("/admin/users/%d", u.ID)),
		chromedp.WaitVisible(`[data-testid="admin-user-subscription"]`, chromedp.ByQuery),
		chromedp.Evaluate(overflowing, &userOut),
	))
	require.Empty(t, billingOut, "the billing page at 390px")
	require.Empty(t, userOut, "a user's page with their subscription at 390px")
	var got, reference string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT status, reference FROM orders WHERE id = $1`, o.ID).Scan(&got, &reference))
	require.Equal(t, billing.OrderPaid, got)
	require.Equal(t, "WIRE-42", reference)
}
