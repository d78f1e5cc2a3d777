package browsertest_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestBuyPlanInBrowser: a user on a phone's screen picks Team on the plan
// page, paid by bank transfer, and reads the admin's instructions and the
// order number; an admin, in another browser, finds the order and marks it
// paid with the transfer's reference; the user's plan page shows Team's
// limits at once; the user cancels, and keeps Team until the period's
// end.
func TestBuyPlanInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, _, team := b.ShopOpen(t)
	_, email := b.SignedUpUser(t, "browser-buyer")
	_, adminEmail := b.SignedUpAdmin(t, "browser-cashier")

	user := testenv.Browser(t)
	require.NoError(t, chromedp.Run(user, chromedp.EmulateViewport(390, 900)))
	browserSignIn(t, user, b.Server.URL, email, "password of browser-buyer")
	var instructions, number, status string
	var out []string
	require.NoError(t, chromedp.Run(user,
		chromedp.Navigate(b.Server.URL+"/billing"),
		chromedp.WaitVisible(`[data-testid="billing-plan-card"][data-plan="Team"]`, chromedp.ByQuery),
		chromedp.Evaluate(overflowing, &out),
		chromedp.Click(`[data-testid="billing-plan-card"][data-plan="Team"] [data-testid="billing-choose"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="billing-instructions"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="billing-instructions"]`, &instructions, chromedp.ByQuery),
		chromedp.Text(`h1`, &number, chromedp.ByQuery),
	))
	require.Empty(t, out, "the plan page at 390px")
	require.Contains(t, instructions, "Transfer to IBAN XX00 1234.")
	var orderID int64
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT id FROM orders WHERE plan_id = $1`, team).Scan(&orderID))
	var orderNumber string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT number FROM orders WHERE id = $1`, orderID).Scan(&orderNumber))
	require.Contains(t, number, orderNumber)

	admin := testenv.Browser(t)
	browserSignIn(t, admin, b.Server.URL, adminEmail, "password of browser-cashier")
	require.NoError(t, chromedp.Run(admin,
		chromedp.Navigate(b.Server.URL+"/admin/orders?status=pending"),
		chromedp.Click(fmt.Sprintf(`a[href="/admin/orders/%d"]`, orderID), chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="order-paid-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid="order-paid-form"] input[name="reference"]`, "BANK-2026-12-02", chromedp.ByQuery),
		chromedp.Click(`[data-testid="order-mark-paid"]`, chromedp.ByQuery),
		// The form posts and the order's page loads again: wait for what
		// only the new page has (the old page's form could be gone while
		// its status was still to be read: "No node with given id found").
		chromedp.WaitVisible(`[data-testid="order-status"] [data-order-status="paid"]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`[data-testid="order-paid-form"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="order-status"]`, &status, chromedp.ByQuery),
	))
	require.Contains(t, status, "paid")

	var plan, maxClusters, period, flash string
	require.NoError(t, chromedp.Run(user,
		chromedp.Navigate(b.Server.URL+"/billing"),
		chromedp.Text(`[data-testid="billing-plan-name"]`, &plan, chromedp.ByQuery),
		chromedp.AttributeValue(`[data-testid="billing-limit-clusters"]`, "data-max", &maxClusters, nil, chromedp.ByQuery),
		chromedp.Click(`[data-testid="billing-cancel"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="billing-resume"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.Text(`[data-testid="billing-period-end"]`, &period, chromedp.ByQuery),
		chromedp.Text(`[data-testid="billing-plan-name"]`, &plan, chromedp.ByQuery),
	))
	require.Equal(t, "Team", plan, "kept until the period's end")
	require.Equal(t, "6", maxClusters, "Team's limit, at once")
	require.Contains(t, flash, "Your plan ends at the end of the period.")
	require.Contains(t, period, "Cancelled: you keep this plan until")
}
