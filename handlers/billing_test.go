package handlers_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/billing"
)

// TestBillingPage: a user sees their plan (the default one) and what they
// use of each limit, their own only, over a limit marked; in Chinese the
// plan's Chinese name; the same from GET /api/v1/billing; signed out, the
// page asks to sign in.
func TestBillingPage(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	ctx := context.Background()
	c, email := b.SignedUpUser(t, "billing-user")
	other, _ := b.SignedUpUser(t, "billing-other")
	var uid int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id FROM users WHERE email = $1`, email).Scan(&uid))
	// Two clusters, one with four nodes and a host name; the other user's
	// clusters count for them, not for this user.
	for _, cl := range []struct {
		owner *handlerstest.Client
		name  string
	}{{c, "one"}, {c, "two"}, {other, "theirs"}, {other, "theirs-too"}, {other, "theirs-three"}} {
		b.NewCluster(t, cl.owner, cl.name)
	}
	_, err := b.Pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready)
		SELECT c.id, 'n' || i, true FROM clusters c, generate_series(1, 4) i WHERE c.owner_id = $1 AND c.name = 'one'`, uid)
	require.NoError(t, err)
	_, err = b.Pool.Exec(ctx, `INSERT INTO cluster_hostnames (cluster_id, name, managed)
		SELECT c.id, 'shop.example.com', false FROM clusters c WHERE c.owner_id = $1 AND c.name = 'one'`, uid)
	require.NoError(t, err)
	// The free plan allows 3 nodes per cluster here.
	_, err = b.Pool.Exec(ctx, `UPDATE plans SET max_nodes_per_cluster = 3, name_zh = '免费版' WHERE is_default`)
	require.NoError(t, err)

	code, body := c.Get("/billing")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="billing-plan-name">free<`)
	require.Contains(t, body, `data-testid="billing-limit-clusters" data-used="2" data-max="3"`)
	require.Contains(t, body, `data-testid="billing-limit-nodes" data-used="4" data-max="3" data-over`)
	require.Contains(t, body, `data-testid="billing-limit-hostnames" data-used="1" data-max="10"`)
	require.Contains(t, body, `data-testid="billing-over-nodes"`)
	require.NotContains(t, body, `data-testid="billing-over-clusters"`)
	require.Contains(t, body, "2 of 3")
	require.Contains(t, body, `data-testid="billing-plan-prices">Free</p>`)

	_, err = b.Pool.Exec(ctx, `UPDATE users SET language = 'zh-CN' WHERE id = $1`, uid)
	require.NoError(t, err)
	_, body = c.Get("/billing")
	require.Contains(t, body, `data-testid="billing-plan-name">免费版<`)
	require.Contains(t, body, "已用 2 / 3")

	key := c.CreateKey("billing")
	r := b.APICall(t, http.MethodGet, "/api/v1/billing", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, `{"plan":{"id":1,"name":"free","default":true,"max_clusters":3,"max_nodes_per_cluster":3,"max_hostnames_per_cluster":10,
		"managed_ingress":true,"currency":"USD","free":true,"price_monthly":null,"price_yearly":null},
		"usage":{"clusters":2,"most_nodes_in_a_cluster":4,"most_hostnames_in_a_cluster":1},
		"subscription":{"status":"active","period":"","period_end":null,"cancel_at_period_end":false,"scheduled_plan":""}}`, r.Body)
	r = b.APICall(t, http.MethodGet, "/api/v1/billing", "kb_nonsense", "")
	require.Equal(t, http.StatusUnauthorized, r.Status)

	resp, err := b.Client(t).HTTP.Get(b.Server.URL + "/billing")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "/login")
}

// TestBillingOrder: a user picks a paid plan and gets an order with the
// admin's payment instructions and its number as the reference; another
// user gets 404 for its page, receipt and cancel; paid, the user's plan
// and period show on /billing and in the API, and the receipt prints;
// cancel keeps the plan until the period's end, and resume undoes it.
func TestBillingOrder(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	svc, admin, team := b.ShopOpen(t)
	c, email := b.SignedUpUser(t, "buyer")
	intruder, _ := b.SignedUpUser(t, "intruder")

	_, body := c.Get("/billing")
	require.Contains(t, body, `data-testid="billing-plan-card" data-plan="Team"`)
	require.Contains(t, body, `data-testid="billing-no-orders"`)
	resp := c.Post("/billing", "/billing/orders", url.Values{"plan_id": {fmt.Sprint(team)}, "period": {"month"}, "method": {"manual"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	orderPath := resp.Header.Get("Location")
	require.Regexp(t, `^/billing/orders/\d+$`, orderPath)
	_, body = c.Get(orderPath)
	require.Contains(t, body, `data-testid="billing-order" data-status="pending"`)
	require.Contains(t, body, "Transfer to IBAN XX00 1234.\nBank: Example Bank")
	require.Contains(t, body, "USD 10.00")
	var orderID int64
	var number string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id, number FROM orders WHERE user_id = $1`, b.UserID(t, email)).Scan(&orderID, &number))
	require.Contains(t, body, "Use "+number+" as the payment")

	// Bad choices: said on the page, nothing written.
	for _, form := range []url.Values{
		{"plan_id": {"999999"}, "period": {"month"}, "method": {"manual"}},
		{"plan_id": {fmt.Sprint(team)}, "period": {"week"}, "method": {"manual"}},
		{"plan_id": {fmt.Sprint(team)}, "period": {"month"}, "method": {"stripe"}},
	} {
		resp := c.Post("/billing", "/billing/orders", form)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, form)
		require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="billing-error"`)
	}

	// Another user: 404 for each of its routes.
	for _, path := range []string{orderPath, orderPath + "/receipt"} {
		code, _ := intruder.Get(path)
		require.Equal(t, http.StatusNotFound, code, path)
	}
	resp = intruder.Post("/billing", orderPath+"/cancel", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	code, _ := c.Get(orderPath + "/receipt")
	require.Equal(t, http.StatusNotFound, code, "no receipt before payment")

	_, err := svc.MarkPaid(ctx, orderID, "BANK-REF-7", admin)
	require.NoError(t, err)
	_, body = c.Get("/billing")
	require.Contains(t, body, `data-testid="billing-plan-name">Team<`)
	require.Contains(t, body, `data-testid="billing-limit-clusters" data-used="0" data-max="6"`)
	require.Contains(t, body, `data-testid="billing-order-row" data-number="`+number+`" data-status="paid"`)
	_, body = c.Get(orderPath + "/receipt")
	require.Contains(t, body, `data-testid="billing-receipt"`)
	require.Contains(t, body, "KubeBYON Ltd")
	require.Contains(t, body, email)

	key := c.CreateKey("orders")
	r := b.APICall(t, http.MethodGet, "/api/v1/orders", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"number":"`+number+`"`)
	require.Contains(t, r.Body, `"status":"paid","method":"manual","currency":"USD","amount":1000,"credit":0,"tax":0,"total":1000`)
	r = b.APICall(t, http.MethodGet, "/api/v1/orders", intruder.CreateKey("peek"), "")
	require.JSONEq(t, `{"orders":[]}`, r.Body)
	r = b.APICall(t, http.MethodGet, "/api/v1/billing", key, "")
	require.Contains(t, r.Body, `"subscription":{"status":"active","period":"month","period_end":"`)

	// Cancel: kept until the period's end; resume undoes it.
	resp = c.Post("/billing", "/billing/cancel", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get("/billing")
	require.Contains(t, body, "Cancelled: you keep this plan until")
	require.Contains(t, body, `data-testid="billing-resume"`)
	resp = c.Post("/billing", "/billing/resume", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get("/billing")
	require.Contains(t, body, "Pay the next one to keep this plan")
}

// TestStripeWebhookRoute: /webhooks/stripe takes no session and no CSRF
// token; a delivery whose signature does not verify is 400 with a JSON
// error and changes nothing; a verified one about no order of ours is
// acknowledged.
func TestStripeWebhookRoute(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	svc := &billing.Service{Pool: b.Pool, Box: b.Box}
	_, adminEmail := b.SignedUpAdmin(t, "stripe-admin")
	st := billing.DefaultSettings()
	st.Methods = []string{billing.MethodStripe}
	st.StripeSecretKey, st.StripeWebhookSecret = "sk_test_x", "whsec_route"
	require.NoError(t, svc.SaveSettings(ctx, st, audit.Actor{UserID: b.UserID(t, adminEmail)}))

	payload := []byte(`{"id":"evt_1","object":"event","api_version":"2024-06-20","created":` + fmt.Sprint(time.Now().Unix()) +
		`,"type":"checkout.session.completed","data":{"object":{"id":"cs_unknown","object":"checkout.session","payment_status":"paid"}}}`)
	post := func(secret string) (int, string) {
		header := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: time.Now()}).Header
		req, err := http.NewRequest(http.MethodPost, b.Server.URL+"/webhooks/stripe", bytes.NewReader(payload))
		require.NoError(t, err)
		req.Header.Set("Stripe-Signature", header)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp.StatusCode, handlerstest.ReadBody(t, resp)
	}
	code, body := post("whsec_forged")
	require.Equal(t, http.StatusBadRequest, code)
	require.JSONEq(t, `{"error":{"code":"bad_signature","message":"The event's signature does not verify."}}`, body)
	code, body = post("whsec_route")
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"received":true}`, body)
}

// TestBillingUnpricedPeriod: a plan whose yearly price the admin left
// empty (issue 35: stored as 0, offered as "USD 0.00 a year", and a POST
// for it switched the user to the paid plan at once) is offered monthly
// only, and a forged yearly choice is refused where the user is, with
// nothing written.
func TestBillingUnpricedPeriod(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	_, _, _ = b.ShopOpen(t)
	admin, _ := b.SignedUpAdmin(t, "prices-admin")
	form := handlerstest.PlanForm("Monthly")
	form.Set("currency", "USD")
	form.Set("price_monthly", "10")
	form.Set("price_yearly", "")
	resp := admin.Post("/admin/plans", "/admin/plans", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	var planID int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id FROM plans WHERE name = 'Monthly' AND price_yearly IS NULL AND NOT free`).Scan(&planID))

	c, email := b.SignedUpUser(t, "unpriced")
	uid := b.UserID(t, email)
	_, body := c.Get("/billing")
	card := body[strings.Index(body, `data-plan="Monthly"`):]
	card = card[:strings.Index(card, "</article>")]
	require.Contains(t, card, `data-testid="billing-plan-prices">USD 10.00 a month</p>`)
	require.NotContains(t, card, `value="year"`)
	require.NotContains(t, card, "USD 0.00")

	resp = c.Post("/billing", "/billing/orders", url.Values{"plan_id": {fmt.Sprint(planID)}, "period": {"year"}, "method": {"manual"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "That plan is not sold for that period.")
	var onPlan bool
	var orders int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT plan_id = $2, (SELECT count(*) FROM orders WHERE user_id = $1) FROM subscriptions
		WHERE org_id = (SELECT id FROM organizations WHERE personal_of = $1)`, uid, planID).Scan(&onPlan, &orders))
	require.False(t, onPlan, "not switched to the paid plan")
	require.Zero(t, orders)

	// A price of 0 is refused at its field; free is said on purpose.
	form = handlerstest.PlanForm("Zero")
	form.Set("price_yearly", "0")
	resp = admin.Post("/admin/plans", "/admin/plans", form)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-price_yearly">A price must be above 0.`)
	form = handlerstest.PlanForm("Gift")
	form.Set("price_monthly", "")
	form.Set("price_yearly", "")
	form.Set("free", "on")
	resp = admin.Post("/admin/plans", "/admin/plans", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	code, body := admin.Get(resp.Header.Get("Location"))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `value="on" checked data-testid="plan-free"`)
}
