package handlers_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/queries"
)

// orderNumbers are the order numbers of a list, in its order.
func orderNumbers(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`data-testid="order-row" data-order-number="([^"]+)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestAdminOrderMarkPaid: an admin sees a user's pending manual order,
// for their personal organization and placed by them, marks it paid with
// its reference (none is a 422 at the field), and the user is on its plan
// for a month; the order's history says who; a second mark is refused and
// changes nothing; the overview counts it.
func TestAdminOrderMarkPaid(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	w := handlerstest.NewBillingWorld(t, b, "order-paid-admin")
	_, u, o := w.Order(t, b, "order-paid-user")
	page := fmt.Sprintf("/admin/orders/%d", o.ID)

	code, body := w.Admin.Get("/admin/orders")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-nav-orders" aria-current="page"`)
	require.Equal(t, []string{o.Number}, orderNumbers(body))
	require.Contains(t, body, u.Email)
	require.Contains(t, body, fmt.Sprintf(`href="/admin/organizations/%d" data-testid="order-row-org">%s<`, o.OrgID, u.Name))
	require.Contains(t, body, "USD 10.00")
	require.Contains(t, body, `data-order-status="pending"`)

	code, body = w.Admin.Get("/admin/billing")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="billing-awaiting" data-count="1"`)
	require.Contains(t, body, `href="/admin/orders?status=pending"`)

	code, body = w.Admin.Get(page)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="order-paid-form"`)
	require.Contains(t, body, `data-testid="order-cancel-form"`)
	require.Contains(t, body, fmt.Sprintf(`href="/admin/users/%d" data-testid="order-user"`, u.ID))
	require.Contains(t, body, fmt.Sprintf(`href="/admin/organizations/%d" data-testid="order-org">%s<`, o.OrgID, u.Name))
	require.Contains(t, body, `data-kind="created"`)

	// No reference.
	resp := w.Admin.Post(page, page+"/paid", url.Values{"reference": {"  "}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-reference">Enter the payment&#39;s reference`)
	status := func() string {
		var s string
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT status FROM orders WHERE id = $1`, o.ID).Scan(&s))
		return s
	}
	require.Equal(t, billing.OrderPending, status())

	// Paid.
	before := time.Now()
	resp = w.Admin.Post(page, page+"/paid", url.Values{"reference": {" WIRE-2025-001 "}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, page, resp.Header.Get("Location"))
	require.Equal(t, billing.OrderPaid, status())
	sub, err := w.Billing.SubscriptionOf(ctx, actingAs(t, b.Pool, u.ID))
	require.NoError(t, err)
	require.Equal(t, w.Plan.ID, sub.PlanID)
	require.Equal(t, billing.StatusActive, sub.Status)
	require.True(t, sub.CurrentPeriodEnd.Valid)
	require.WithinDuration(t, before.AddDate(0, 1, 0), sub.CurrentPeriodEnd.Time, time.Minute, "a month ahead")

	code, body = w.Admin.Get(page)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Order marked paid.")
	require.Contains(t, body, `data-testid="order-status"`)
	require.Contains(t, body, `data-order-status="paid"`)
	require.Contains(t, body, "WIRE-2025-001")
	require.NotContains(t, body, `data-testid="order-paid-form"`, "a paid order cannot be paid again")
	// The event's row, then its detail's.
	paidRow := regexp.MustCompile(`(?s)<tr data-testid="order-event" data-kind="paid".*?</tr>.*?</tr>`).FindString(body)
	require.NotEmpty(t, paidRow, body)
	require.Contains(t, paidRow, w.AdminEmail)
	require.Contains(t, paidRow, `{&#34;reference&#34;:&#34;WIRE-2025-001&#34;}`)

	// A second mark is refused and changes nothing.
	resp = w.Admin.Post(page, page+"/paid", url.Values{"reference": {"WIRE-2025-002"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "This order is paid already.")
	var reference string
	var paidEvents int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT reference FROM orders WHERE id = $1`, o.ID).Scan(&reference))
	require.Equal(t, "WIRE-2025-001", reference)
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM order_events WHERE order_id = $1 AND kind = 'paid'`, o.ID).Scan(&paidEvents))
	require.Equal(t, 1, paidEvents)
	again, err := w.Billing.SubscriptionOf(ctx, actingAs(t, b.Pool, u.ID))
	require.NoError(t, err)
	require.Equal(t, sub.CurrentPeriodEnd.Time, again.CurrentPeriodEnd.Time, "the period was applied once")

	// Cancelling a paid order is refused too.
	resp = w.Admin.Post(page, page+"/cancel", nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "This order is paid already.")
	require.Equal(t, billing.OrderPaid, status())

	// The overview: nothing awaits, the plan has one active subscription,
	// this month's revenue.
	_, body = w.Admin.Get("/admin/billing")
	require.Contains(t, body, `data-testid="billing-awaiting" data-count="0"`)
	planRow := regexp.MustCompile(`(?s)<tr data-testid="billing-plan-row" data-plan="` + regexp.QuoteMeta(w.Plan.Name) + `">.*?</tr>`).FindString(body)
	require.Contains(t, planRow, `data-testid="billing-plan-active">1<`)
	month := time.Now().UTC().Format("2006-01")
	revenueRow := regexp.MustCompile(`(?s)<tr data-testid="billing-revenue-row" data-month="` + month + `">.*?</tr>`).FindString(body)
	require.Contains(t, revenueRow, "USD 10.00")
	require.Equal(t, 12, strings.Count(body, `data-testid="billing-revenue-row"`), "12 months of the one currency")

	// Unknown orders.
	code, _ = w.Admin.Get("/admin/orders/999999")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = w.Admin.Get("/admin/orders/nope")
	require.Equal(t, http.StatusNotFound, code)
	resp = w.Admin.Post(page, "/admin/orders/999999/paid", url.Values{"reference": {"x"}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestAdminOrderCancel: an admin cancels a pending order, which is
// recorded by the admin; it cannot then be paid or cancelled again.
func TestAdminOrderCancel(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	w := handlerstest.NewBillingWorld(t, b, "order-cancel-admin")
	_, _, o := w.Order(t, b, "order-cancel-user")
	page := fmt.Sprintf("/admin/orders/%d", o.ID)

	resp := w.Admin.Post(page, page+"/cancel", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body := w.Admin.Get(page)
	require.Contains(t, body, "Order cancelled.")
	require.Contains(t, body, `data-order-status="cancelled"`)
	require.NotContains(t, body, `data-testid="order-actions"`)
	cancelRow := regexp.MustCompile(`(?s)<tr data-testid="order-event" data-kind="cancelled".*?</tr>`).FindString(body)
	require.Contains(t, cancelRow, w.AdminEmail)

	resp = w.Admin.Post(page, page+"/cancel", nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "This order is closed")
	resp = w.Admin.Post(page, page+"/paid", url.Values{"reference": {"late"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "This order is closed")
	var status string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT status FROM orders WHERE id = $1`, o.ID).Scan(&status))
	require.Equal(t, billing.OrderCancelled, status)
	var audited int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'billing.order_cancelled' AND actor_id = $1`, w.AdminActor.UserID).Scan(&audited))
	require.Equal(t, 1, audited)
}

// TestAdminOrdersListFilterAndCSV: the list filters by status, method,
// user (whatever the case of the address), number and dates, pages by 50
// with an "Older" link, and its CSV holds the filter's orders.
func TestAdminOrdersListFilterAndCSV(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	w := handlerstest.NewBillingWorld(t, b, "orders-list-admin")
	_, pendingUser, pending := w.Order(t, b, "orders-list-pending")
	_, paidUser, paid := w.Order(t, b, "orders-list-paid")
	_, err := w.Billing.MarkPaid(ctx, paid.ID, "=SUM(A1)", w.AdminActor)
	require.NoError(t, err)

	list := func(query string) []string {
		t.Helper()
		code, body := w.Admin.Get("/admin/orders?" + query)
		require.Equal(t, http.StatusOK, code, body)
		return orderNumbers(body)
	}
	require.Equal(t, []string{paid.Number, pending.Number}, list(""), "newest first")
	require.Equal(t, []string{pending.Number}, list("status=pending"))
	require.Equal(t, []string{paid.Number}, list("status=paid"))
	require.Equal(t, []string{paid.Number, pending.Number}, list("method=manual"))
	require.Empty(t, list("method=stripe"))
	require.Equal(t, []string{paid.Number}, list("email="+url.QueryEscape(strings.ToUpper(paidUser.Email))))
	require.Empty(t, list("email=nobody%40example.com"))
	require.Equal(t, []string{pending.Number}, list("number="+strings.ToLower(pending.Number)))
	today := time.Now().UTC()
	require.Equal(t, []string{paid.Number, pending.Number}, list("from="+today.Format(time.DateOnly)+"&to="+today.Format(time.DateOnly)))
	require.Empty(t, list("from="+today.AddDate(0, 0, 1).Format(time.DateOnly)))
	require.Empty(t, list("to="+today.AddDate(0, 0, -1).Format(time.DateOnly)))
	code, body := w.Admin.Get("/admin/orders?from=yesterday")
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Contains(t, body, `data-testid="error-from">Enter a date such as 2025-01-31.`)

	// The CSV of a filter.
	resp, err := w.Admin.HTTP.Get(w.Admin.Base + "/admin/orders.csv?status=paid")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/csv; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Regexp(t, `^attachment; filename="orders-\d{8}-\d{6}\.csv"$`, resp.Header.Get("Content-Disposition"))
	records, err := csv.NewReader(resp.Body).ReadAll()
	require.NoError(t, err)
	require.Len(t, records, 2, "the header and the paid order")
	row := map[string]string{}
	for i, col := range records[0] {
		row[col] = records[1][i]
	}
	require.Equal(t, paid.Number, row["number"])
	require.Equal(t, paidUser.Email, row["user_email"])
	require.Equal(t, paidUser.Name, row["organization"], "their personal organization")
	require.Equal(t, "10.00", row["total"])
	require.Equal(t, "USD", row["currency"])
	require.Equal(t, "paid", row["status"])
	require.Equal(t, "'=SUM(A1)", row["reference"], "a formula is kept as text")
	require.NotEmpty(t, row["paid_at"])

	// 55 more, closed, orders of the pending user: 50 a page.
	_, err = b.Pool.Exec(ctx, `INSERT INTO orders (org_id, user_id, plan_id, period, kind, currency, amount, total, method, status, expires_at, closed_at)
		SELECT (SELECT id FROM organizations WHERE personal_of = $1), $1, $2, 'month', 'new', 'USD', 1000, 1000, 'manual', 'expired', now(), now()
		FROM generate_series(1, 55)`, pendingUser.ID, w.Plan.ID)
	require.NoError(t, err)
	code, body = w.Admin.Get("/admin/orders")
	require.Equal(t, http.StatusOK, code)
	first := orderNumbers(body)
	require.Len(t, first, 50)
	require.NotContains(t, body, `data-testid="orders-newest"`)
	older := handlerstest.LinkOf(t, body, "orders-older")
	require.Regexp(t, `^/admin/orders\?before=\d+$`, older)
	code, body = w.Admin.Get(older)
	require.Equal(t, http.StatusOK, code)
	second := orderNumbers(body)
	require.Len(t, second, 7)
	require.Equal(t, []string{paid.Number, pending.Number}, second[5:], "the oldest last")
	require.NotContains(t, body, `data-testid="orders-older"`)
	require.Contains(t, body, `data-testid="orders-newest"`)
	// The filter goes with the pages.
	_, body = w.Admin.Get("/admin/orders?status=expired")
	require.Len(t, orderNumbers(body), 50)
	require.Regexp(t, `^/admin/orders\?before=\d+&status=expired$`, handlerstest.LinkOf(t, body, "orders-older"))
	require.Contains(t, body, `href="/admin/orders.csv?status=expired"`)
}

// TestAdminBillingSettings: a bad tax rate is a 422 at its field and
// saves nothing; good settings are stored (the rate as basis points),
// the Stripe secrets never shown and kept when left empty; the page shows
// the webhook URL to give Stripe.
func TestAdminBillingSettings(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, _ := b.SignedUpAdmin(t, "billing-settings-admin")
	load := func() billing.Settings {
		t.Helper()
		st, err := billing.LoadSettings(ctx, queries.New(b.Pool), b.Box)
		require.NoError(t, err)
		return st
	}

	code, body := admin.Get("/admin/billing")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-nav-billing" aria-current="page"`)
	require.Contains(t, body, "<code>"+b.Server.URL+"/webhooks/stripe</code>")
	require.Contains(t, body, `value="72"`, "the default order expiry")
	require.Contains(t, body, "Nothing is stored yet.")
	// Cards alone until the admin chooses: every Stripe account takes them.
	require.Contains(t, body, `id="stripe-method-card" name="stripe_methods" type="checkbox" value="card" checked`)
	require.Contains(t, body, `id="stripe-method-alipay" name="stripe_methods" type="checkbox" value="alipay" data-testid`)
	require.Contains(t, body, "Alipay <small>(AUD, CAD, CNY, EUR, GBP, HKD, JPY, MYR, NZD, SGD, USD)</small>")

	form := func() url.Values {
		return url.Values{
			"methods": {"manual", "stripe"}, "manual_instructions": {"Transfer to IBAN XX00 0000."},
			"order_expiry_hours": {"48"}, "grace_days": {"5"},
			"seller_name": {"KubeBYON Ltd"}, "seller_address": {"1 Main St\nSpringfield"}, "seller_tax_id": {"GB123"},
			"tax_label": {"VAT"}, "tax_rate": {"8.25"},
			"stripe_secret_key": {"sk_test_secret_123"}, "stripe_webhook_secret": {"whsec_secret_456"},
			"stripe_methods": {"card", "wechat_pay"},
		}
	}

	for _, rate := range []string{"8.255", "abc", "101", "-1"} {
		bad := form()
		bad.Set("tax_rate", rate)
		bad.Set("grace_days", "lots")
		resp := admin.Post("/admin/billing", "/admin/billing/settings", bad)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, rate)
		body := handlerstest.ReadBody(t, resp)
		require.Contains(t, body, `data-testid="error-tax_rate">Enter a rate from 0 to 100 percent`, rate)
		require.Contains(t, body, `data-testid="error-grace_days">`, rate)
		require.Contains(t, body, "The billing settings were not saved")
		require.Contains(t, body, `value="`+rate+`"`, "what was typed is kept")
		require.NotContains(t, body, "sk_test_secret_123", "a secret is never shown back")
	}
	require.Empty(t, load().Methods, "nothing was saved")

	resp := admin.Post("/admin/billing", "/admin/billing/settings", form())
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, "/admin/billing", resp.Header.Get("Location"))
	st := load()
	require.Equal(t, []string{"manual", "stripe"}, st.Methods)
	require.Equal(t, 825, st.TaxRateBasisPoints)
	require.Equal(t, "VAT", st.TaxLabel)
	require.Equal(t, 48, st.OrderExpiryHours)
	require.Equal(t, 5, st.GraceDays)
	require.Equal(t, "1 Main St\nSpringfield", st.SellerAddress)
	require.Equal(t, "sk_test_secret_123", st.StripeSecretKey)
	require.Equal(t, "whsec_secret_456", st.StripeWebhookSecret)
	require.Equal(t, []string{"card", "wechat_pay"}, st.StripeMethods)

	_, body = admin.Get("/admin/billing")
	require.Contains(t, body, "Billing settings saved.")
	require.Contains(t, body, `value="wechat_pay" checked`)
	require.NotContains(t, body, `value="alipay" checked`)
	require.Contains(t, body, `value="8.25"`)
	require.Contains(t, body, `id="method-stripe" name="methods" type="checkbox" value="stripe" checked`)
	require.NotContains(t, body, "sk_test_secret_123")
	require.NotContains(t, body, "whsec_secret_456")
	require.Contains(t, body, "A value is stored and never shown.")

	// Secrets left empty are kept.
	next := form()
	next.Set("stripe_secret_key", "")
	next.Set("stripe_webhook_secret", "")
	next.Set("tax_rate", "10")
	resp = admin.Post("/admin/billing", "/admin/billing/settings", next)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	st = load()
	require.Equal(t, 1000, st.TaxRateBasisPoints)
	require.Equal(t, "sk_test_secret_123", st.StripeSecretKey)
	require.Equal(t, "whsec_secret_456", st.StripeWebhookSecret)
	_, body = admin.Get("/admin/billing")
	require.Contains(t, body, `id="tax_rate" name="tax_rate" type="text" value="10"`)

	// Stripe with no payment method, or one it does not know: errors at
	// the methods, nothing saved.
	for _, methods := range [][]string{nil, {"paypal"}} {
		bad := form()
		bad["stripe_methods"] = methods
		resp = admin.Post("/admin/billing", "/admin/billing/settings", bad)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-stripe_methods">Choose`)
	}
	require.Equal(t, []string{"card", "wechat_pay"}, load().StripeMethods)

	// Manual payments need their instructions: a field error from the
	// service.
	bad := form()
	bad.Set("manual_instructions", " ")
	resp = admin.Post("/admin/billing", "/admin/billing/settings", bad)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-manual_instructions">`)
	var audited int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'billing.settings'`).Scan(&audited))
	require.Equal(t, 2, audited)
}

// TestAdminBillingUserSubscription: on a user's admin page, the
// subscription and its latest orders; an admin puts the user on a plan,
// extends their period and cancels it, each for a reason (none is a 422
// at the field, and changes nothing).
func TestAdminBillingUserSubscription(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	w := handlerstest.NewBillingWorld(t, b, "sub-admin")
	_, u, o := w.Order(t, b, "sub-user")
	page := fmt.Sprintf("/admin/users/%d", u.ID)
	planOf := func() billing.Subscription {
		t.Helper()
		sub, err := w.Billing.SubscriptionOf(ctx, actingAs(t, b.Pool, u.ID))
		require.NoError(t, err)
		return sub
	}
	free := planOf().Plan

	code, body := w.Admin.Get(page)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-user-subscription"`)
	require.Contains(t, body, fmt.Sprintf(`href="/admin/organizations/%d" data-testid="sub-org">%s<`, o.OrgID, u.Name))
	require.Contains(t, body, `data-testid="sub-plan">`+free.Name+`<`)
	require.Contains(t, body, "No end (no paid period)")
	require.Contains(t, body, fmt.Sprintf(`href="/admin/orders/%d" data-testid="order-link-%s"`, o.ID, o.Number))
	require.Contains(t, body, `href="/admin/orders?email=`+url.QueryEscape(u.Email)+`"`)
	require.Contains(t, body, fmt.Sprintf(`<option value="%d">%s</option>`, w.Plan.ID, w.Plan.Name))

	// Put on a plan: a reason is required.
	resp := w.Admin.Post(page, page+"/subscription/plan", url.Values{"plan_id": {fmt.Sprint(w.Plan.ID)}, "reason": {" "}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	body = handlerstest.ReadBody(t, resp)
	require.Contains(t, body, `data-testid="error-reason-plan">Say why`)
	require.Contains(t, body, fmt.Sprintf(`<option value="%d" selected>`, w.Plan.ID), "the choice is kept")
	require.Equal(t, free.ID, planOf().PlanID)
	resp = w.Admin.Post(page, page+"/subscription/plan", url.Values{"plan_id": {"999999"}, "reason": {"typo"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "There is no such plan.")
	resp = w.Admin.Post(page, page+"/subscription/plan", url.Values{"plan_id": {fmt.Sprint(w.Plan.ID)}, "reason": {"Sponsored project"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, page, resp.Header.Get("Location"))
	require.Equal(t, w.Plan.ID, planOf().PlanID)
	_, body = w.Admin.Get(page)
	require.Contains(t, body, "The user is on the new plan.")
	require.Contains(t, body, `data-testid="sub-plan">`+w.Plan.Name+`<`)
	var reason string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT details->>'reason' FROM audit_events WHERE action = 'billing.admin_set_plan' AND actor_id = $1`, w.AdminActor.UserID).Scan(&reason))
	require.Equal(t, "Sponsored project", reason)

	// Extend: only a paid period, by 1 to 366 days, for a reason.
	resp = w.Admin.Post(page, page+"/subscription/extend", url.Values{"days": {"5"}, "reason": {"Outage"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="sub-error-extend">There is no paid period to change.`)
	end := time.Now().Add(10 * 24 * time.Hour).UTC().Truncate(time.Second)
	_, err := b.Pool.Exec(ctx, `UPDATE subscriptions SET period = 'month', period_anchor = now(), current_period_end = $2
		WHERE org_id = (SELECT id FROM organizations WHERE personal_of = $1)`, u.ID, end)
	require.NoError(t, err)
	resp = w.Admin.Post(page, page+"/subscription/extend", url.Values{"days": {"lots"}, "reason": {"Outage"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	body = handlerstest.ReadBody(t, resp)
	require.Contains(t, body, `data-testid="error-days-extend">Enter a number of days from 1 to 366.`)
	require.Contains(t, body, `value="Outage"`, "the reason is kept")
	resp = w.Admin.Post(page, page+"/subscription/extend", url.Values{"days": {"5"}, "reason": {""}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-reason-extend">`)
	require.True(t, planOf().CurrentPeriodEnd.Time.Equal(end), "nothing changed")
	resp = w.Admin.Post(page, page+"/subscription/extend", url.Values{"days": {"5"}, "reason": {"Outage on the 3rd"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.True(t, planOf().CurrentPeriodEnd.Time.Equal(end.AddDate(0, 0, 5)))
	_, body = w.Admin.Get(page)
	require.Contains(t, body, "Period extended.")

	// Cancel now: the default plan at once.
	resp = w.Admin.Post(page, page+"/subscription/cancel", url.Values{"reason": {""}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-reason-cancel">`)
	require.Equal(t, w.Plan.ID, planOf().PlanID)
	resp = w.Admin.Post(page, page+"/subscription/cancel", url.Values{"reason": {"Abuse"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	sub := planOf()
	require.Equal(t, free.ID, sub.PlanID)
	require.Equal(t, billing.StatusCancelled, sub.Status)
	require.False(t, sub.CurrentPeriodEnd.Valid)
	_, body = w.Admin.Get(page)
	require.Contains(t, body, "Subscription cancelled: the user is on the default plan.")
	require.Contains(t, body, `data-testid="sub-status" data-status="cancelled"`)

	// An unknown user.
	resp = w.Admin.Post(page, "/admin/users/999999/subscription/cancel", url.Values{"reason": {"x"}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestAdminOrderRefund: an admin refunds part of a paid manual order (a
// bad amount and a missing reason are 422 at their fields): the period is
// shortened; then the rest: the order is refunded and the user is back on
// the default plan; the history says both.
func TestAdminOrderRefund(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	w := handlerstest.NewBillingWorld(t, b, "refunder")
	_, u, o := w.Order(t, b, "refunded-user")
	_, err := w.Billing.MarkPaid(ctx, o.ID, "TRX-9", w.AdminActor)
	require.NoError(t, err)
	page := fmt.Sprintf("/admin/orders/%d", o.ID)
	sub := func() queries.Subscription {
		s, err := queries.New(b.Pool).SubscriptionGet(ctx, actingAs(t, b.Pool, u.ID).OrgID)
		require.NoError(t, err)
		return s
	}
	end := sub().CurrentPeriodEnd.Time

	for _, tc := range []struct {
		form  url.Values
		field string
	}{
		{url.Values{"amount": {"abc"}, "reason": {"x"}}, "amount"},
		{url.Values{"amount": {"10.01"}, "reason": {"x"}}, "amount"},
		{url.Values{"amount": {"5"}, "reason": {" "}}, "reason"},
	} {
		resp := w.Admin.Post(page, page+"/refund", tc.form)
		body := handlerstest.ReadBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tc.form)
		require.Contains(t, body, `id="`+tc.field+`-error"`, tc.form)
	}
	require.Equal(t, end, sub().CurrentPeriodEnd.Time, "nothing changed")

	resp := w.Admin.Post(page, page+"/refund", url.Values{"amount": {"5"}, "reason": {"outage"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.True(t, sub().CurrentPeriodEnd.Time.Before(end), "half refunded: the period is shortened")
	resp = w.Admin.Post(page, page+"/refund", url.Values{"amount": {"5.00"}, "reason": {"closing the account"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body := w.Admin.Get(page)
	require.Contains(t, body, `data-testid="order-status"`)
	require.NotContains(t, body, `data-testid="order-refund-form"`, "nothing left to refund")
	got, err := queries.New(b.Pool).OrderGet(ctx, o.ID)
	require.NoError(t, err)
	require.Equal(t, "refunded", got.Status)
	require.Equal(t, int64(1000), got.RefundedAmount)
	def, err := queries.New(b.Pool).PlanDefault(ctx)
	require.NoError(t, err)
	require.Equal(t, def.ID, sub().PlanID)
	var refunds int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM order_events WHERE order_id = $1 AND kind = 'refund'`, o.ID).Scan(&refunds))
	require.Equal(t, 2, refunds)
}
