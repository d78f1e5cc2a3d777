package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

type apiPlanOfferJSON struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Current bool   `json:"current"`
	Free    bool   `json:"free"`
	Prices  []struct {
		Period string `json:"period"`
		Amount int64  `json:"amount"`
	} `json:"prices"`
}

type apiOrderJSON struct {
	ID           int64  `json:"id"`
	Number       string `json:"number"`
	Plan         string `json:"plan"`
	Period       string `json:"period"`
	Status       string `json:"status"`
	Method       string `json:"method"`
	Total        int64  `json:"total"`
	Instructions string `json:"instructions"`
}

type apiChoiceJSON struct {
	Result string        `json:"result"`
	Order  *apiOrderJSON `json:"order"`
}

// TestAPIPlansAndOrders: the plans to choose (public ones on sale and the
// user's own, each with the periods on sale and their prices, a page at a
// time); an order chosen under the plan page's rules (a period a plan has
// no price for, an unknown or hidden plan, a method that is off: 422 at
// the field, nothing written; the plan the user has: 409); the order read
// with its payment instructions, replaced by the next, cancelled once; a
// free plan switched to at once; a paid period cancelled at its end and
// resumed, a cheaper plan scheduled for its end.
func TestAPIPlansAndOrders(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	svc, admin, team := b.ShopOpen(t)
	plan := func(in billing.PlanInput) int64 {
		t.Helper()
		in.MaxClusters, in.MaxNodesPerCluster, in.MaxHostnamesPerCluster, in.Currency = 2, 3, 1, "USD"
		p, err := svc.CreatePlan(ctx, in, admin)
		require.NoError(t, err)
		return p.ID
	}
	monthly := plan(billing.PlanInput{Name: "Monthly", Public: true, PriceMonthly: "5", SortOrder: 2})
	hobby := plan(billing.PlanInput{Name: "Hobby", Public: true, Free: true, SortOrder: 3})
	hidden := plan(billing.PlanInput{Name: "Hidden", PriceMonthly: "1", SortOrder: 4})
	archived := plan(billing.PlanInput{Name: "Old", Public: true, PriceMonthly: "1", SortOrder: 5})
	_, err := svc.SetPlanArchived(ctx, archived, true, admin)
	require.NoError(t, err)
	c, email := b.SignedUpUser(t, "api-buyer")
	uid := b.UserID(t, email)
	key := c.CreateKey("billing")

	type planPage struct {
		Plans []apiPlanOfferJSON `json:"plans"`
		Next  string             `json:"next"`
	}
	r := b.APICall(t, http.MethodGet, "/api/v1/plans", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	all := handlerstest.DecodeAs[planPage](t, r)
	require.Empty(t, all.Next)
	byName := map[string]apiPlanOfferJSON{}
	var names []string
	for _, p := range all.Plans {
		byName[p.Name] = p
		names = append(names, p.Name)
	}
	require.ElementsMatch(t, []string{"free", "Team", "Monthly", "Hobby"}, names, "neither the hidden plan nor the archived one")
	require.True(t, byName["free"].Current)
	require.True(t, byName["free"].Free)
	require.Empty(t, byName["free"].Prices, "a free plan has no prices")
	require.False(t, byName["Team"].Current)
	require.Len(t, byName["Team"].Prices, 2)
	require.Equal(t, "month", byName["Team"].Prices[0].Period)
	require.EqualValues(t, 1000, byName["Team"].Prices[0].Amount)
	require.Equal(t, "year", byName["Team"].Prices[1].Period)
	require.EqualValues(t, 10000, byName["Team"].Prices[1].Amount)
	require.Len(t, byName["Monthly"].Prices, 1, "no yearly price: not sold yearly")
	require.Equal(t, "month", byName["Monthly"].Prices[0].Period)
	// A page at a time, in the same order.
	var paged []int64
	cursor := ""
	for range 5 {
		r = b.APICall(t, http.MethodGet, "/api/v1/plans?limit=1"+cursor, key, "")
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		p := handlerstest.DecodeAs[planPage](t, r)
		require.Len(t, p.Plans, 1)
		paged = append(paged, p.Plans[0].ID)
		if p.Next == "" {
			break
		}
		cursor = "&cursor=" + p.Next
	}
	require.Len(t, paged, 4)
	for i, p := range all.Plans {
		require.Equal(t, p.ID, paged[i])
	}

	// Refused choices: at their field, nothing written.
	for _, tc := range []struct{ body, field string }{
		{fmt.Sprintf(`{"plan_id":%d,"period":"year","method":"manual"}`, monthly), "period"},
		{fmt.Sprintf(`{"plan_id":%d,"period":"week","method":"manual"}`, team), "period"},
		{fmt.Sprintf(`{"plan_id":%d,"method":"manual"}`, team), "period"},
		{`{"plan_id":999999,"period":"month","method":"manual"}`, "plan_id"},
		{fmt.Sprintf(`{"plan_id":%d,"period":"month","method":"manual"}`, hidden), "plan_id"},
		{fmt.Sprintf(`{"plan_id":%d,"period":"month","method":"manual"}`, archived), "plan_id"},
		{fmt.Sprintf(`{"plan_id":%d,"period":"month","method":"stripe"}`, team), "method"},
		{fmt.Sprintf(`{"plan_id":%d,"period":"month"}`, team), "method"},
		{`{"period":"month","method":"manual"}`, "plan_id"},
	} {
		r = b.APICall(t, http.MethodPost, "/api/v1/orders", key, tc.body)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, tc.body+": "+r.Body)
		require.Contains(t, handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields, tc.field, tc.body)
	}
	r = b.APICall(t, http.MethodPost, "/api/v1/orders", key, fmt.Sprintf(`{"plan_id":%d,"period":"year","method":"manual"}`, monthly))
	require.Equal(t, "That plan is not sold for that period. Choose another period.", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields["period"])
	r = b.APICall(t, http.MethodPost, "/api/v1/orders", key, `{"plan_id":1,"period":"month"}`)
	require.Equal(t, http.StatusConflict, r.Status, "the plan the user has: %s", r.Body)
	var orders int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE user_id = $1`, uid).Scan(&orders))
	require.Zero(t, orders)

	// An order, with the admin's instructions.
	r = b.APICall(t, http.MethodPost, "/api/v1/orders", key, fmt.Sprintf(`{"plan_id":%d,"period":"month","method":"manual"}`, team))
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	ch := handlerstest.DecodeAs[apiChoiceJSON](t, r)
	require.Equal(t, "order", ch.Result)
	first := *ch.Order
	require.Equal(t, fmt.Sprintf("/api/v1/orders/%d", first.ID), r.Header.Get("Location"))
	require.Equal(t, apiOrderJSON{ID: first.ID, Number: first.Number, Plan: "Team", Period: "month", Status: "pending", Method: "manual", Total: 1000,
		Instructions: "Transfer to IBAN XX00 1234.\nBank: Example Bank"}, first)
	require.Contains(t, b.Audits(t, uid), "billing.order_create")
	r = b.APICall(t, http.MethodGet, r.Header.Get("Location"), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, first, handlerstest.DecodeAs[apiOrderJSON](t, r))
	_, body := c.Get(fmt.Sprintf("/billing/orders/%d", first.ID))
	require.Contains(t, body, `data-testid="billing-order" data-status="pending"`, "the console shows the API's order")

	// The next order replaces it; cancelled, it is closed for good.
	r = b.APICall(t, http.MethodPost, "/api/v1/orders", key, fmt.Sprintf(`{"plan_id":%d,"period":"year","method":"manual"}`, team))
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	second := *handlerstest.DecodeAs[apiChoiceJSON](t, r).Order
	require.EqualValues(t, 10000, second.Total)
	r = b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/orders/%d", first.ID), key, "")
	require.Equal(t, "cancelled", handlerstest.DecodeAs[apiOrderJSON](t, r).Status)
	require.Empty(t, handlerstest.DecodeAs[apiOrderJSON](t, r).Instructions, "only a pending order says how to pay")
	r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/orders/%d/cancel", second.ID), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, "cancelled", handlerstest.DecodeAs[apiOrderJSON](t, r).Status)
	require.Contains(t, b.Audits(t, uid), "billing.order_cancelled")
	r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/orders/%d/cancel", second.ID), key, "")
	require.Equal(t, http.StatusConflict, r.Status, r.Body)
	r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/orders/%d/checkout", second.ID), key, "")
	require.Equal(t, http.StatusConflict, r.Status, "closed: %s", r.Body)
	r = b.APICall(t, http.MethodGet, "/api/v1/orders/999999", key, "")
	require.Equal(t, http.StatusNotFound, r.Status, r.Body)

	// Without a paid period there is nothing to cancel; a free plan is
	// switched to at once.
	r = b.APICall(t, http.MethodPost, "/api/v1/billing/cancel", key, "")
	require.Equal(t, http.StatusConflict, r.Status, r.Body)
	require.Equal(t, "There is no paid period to change.", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Message)
	r = b.APICall(t, http.MethodPost, "/api/v1/orders", key, fmt.Sprintf(`{"plan_id":%d,"period":"month"}`, hobby))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, `{"result":"switched","order":null}`, r.Body)
	r = b.APICall(t, http.MethodGet, "/api/v1/billing", key, "")
	require.Contains(t, r.Body, `"name":"Hobby"`)

	// A paid period: cancelled at its end, and resumed; a cheaper plan
	// follows at its end.
	r = b.APICall(t, http.MethodPost, "/api/v1/orders", key, fmt.Sprintf(`{"plan_id":%d,"period":"month","method":"manual"}`, team))
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	_, err = svc.MarkPaid(ctx, handlerstest.DecodeAs[apiChoiceJSON](t, r).Order.ID, "BANK-REF-9", admin)
	require.NoError(t, err)
	r = b.APICall(t, http.MethodPost, "/api/v1/billing/cancel", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"cancel_at_period_end":true`)
	require.Contains(t, b.Audits(t, uid), "billing.cancel")
	_, body = c.Get("/billing")
	require.Contains(t, body, "Cancelled: you keep this plan until", "the console shows the API's cancellation")
	r = b.APICall(t, http.MethodPost, "/api/v1/billing/resume", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"cancel_at_period_end":false`)
	r = b.APICall(t, http.MethodPost, "/api/v1/orders", key, fmt.Sprintf(`{"plan_id":%d,"period":"month","method":"manual"}`, monthly))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, `{"result":"scheduled","order":null}`, r.Body)
	r = b.APICall(t, http.MethodGet, "/api/v1/billing", key, "")
	require.Contains(t, r.Body, `"scheduled_plan":"Monthly"`)
	r = b.APICall(t, http.MethodGet, "/api/v1/plans", key, "")
	for _, p := range handlerstest.DecodeAs[planPage](t, r).Plans {
		require.Equal(t, p.ID == team, p.Current, p.Name)
	}
}

// TestAPIOrderCheckout: a pending Stripe order opens a Checkout Session at
// stripe-mock (the real Stripe API's mock): its URL is the answer and the
// session is kept on the order, as the console's Pay now does; a manual
// order has no checkout (409).
func TestAPIOrderCheckout(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t, func(d *handlers.Deps) { d.Billing.StripeURL = testenv.StripeMock(t) })
	ctx := context.Background()
	svc, admin, team := b.ShopOpen(t)
	st := billing.DefaultSettings()
	st.Methods = []string{billing.MethodManual, billing.MethodStripe}
	st.ManualInstructions = "Transfer to IBAN XX00 1234."
	st.StripeSecretKey, st.StripeWebhookSecret = testenv.StripeMockKey, "whsec_api"
	require.NoError(t, svc.SaveSettings(ctx, st, admin))
	c, email := b.SignedUpUser(t, "card-buyer")
	key := c.CreateKey("billing")

	r := b.APICall(t, http.MethodPost, "/api/v1/orders", key, fmt.Sprintf(`{"plan_id":%d,"period":"month","method":"manual"}`, team))
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	manual := handlerstest.DecodeAs[apiChoiceJSON](t, r).Order
	r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/orders/%d/checkout", manual.ID), key, "")
	require.Equal(t, http.StatusConflict, r.Status, "paid by hand: %s", r.Body)

	r = b.APICall(t, http.MethodPost, "/api/v1/orders", key, fmt.Sprintf(`{"plan_id":%d,"period":"month","method":"stripe"}`, team))
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	card := handlerstest.DecodeAs[apiChoiceJSON](t, r).Order
	require.Equal(t, "stripe", card.Method)
	require.Empty(t, card.Instructions)
	r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/orders/%d/checkout", card.ID), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	to := handlerstest.DecodeAs[struct {
		URL string `json:"url"`
	}](t, r).URL
	require.Regexp(t, `^https://`, to)
	var session string
	var checkouts int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT o.stripe_session_id, (SELECT count(*) FROM order_events e WHERE e.order_id = o.id AND e.kind = 'checkout')
		FROM orders o WHERE o.id = $1 AND o.user_id = $2`, card.ID, b.UserID(t, email)).Scan(&session, &checkouts))
	require.NotEmpty(t, session, "the session is kept on the order")
	require.Equal(t, 1, checkouts)

	// Another user's order is not found.
	other, _ := b.SignedUpUser(t, "card-other")
	r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/orders/%d/checkout", card.ID), other.CreateKey("peek"), "")
	require.Equal(t, http.StatusNotFound, r.Status, r.Body)
}
