package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/billing"
)

// TestStripeWebhookRefusesForgedEvent: issue 35's attack through the
// route. A correctly signed checkout.session.completed for 1 cent, of a
// session the platform never created, naming another user's manual order
// in client_reference_id, is acknowledged (Stripe need not send it again)
// and changes nothing; an event created in the future is 400, as an
// unsigned one.
func TestStripeWebhookRefusesForgedEvent(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	svc, admin, team := b.ShopOpen(t)
	st := billing.DefaultSettings()
	st.Methods = []string{billing.MethodManual, billing.MethodStripe}
	st.ManualInstructions = "Transfer to IBAN XX00 1234."
	st.StripeSecretKey, st.StripeWebhookSecret = "sk_test_x", "whsec_route"
	require.NoError(t, svc.SaveSettings(ctx, st, admin))
	_, email := b.SignedUpUser(t, "forged-victim")
	victim := b.UserID(t, email)
	ch, err := svc.Choose(ctx, actingAs(t, b.Pool, victim), team, billing.Monthly, billing.MethodManual, audit.Actor{UserID: victim})
	require.NoError(t, err)
	require.Equal(t, int64(1000), ch.Order.Total)

	post := func(id string, created time.Time) (int, string) {
		t.Helper()
		payload, err := json.Marshal(map[string]any{
			"id": id, "object": "event", "api_version": "2024-06-20", "created": created.Unix(), "type": "checkout.session.completed",
			"data": map[string]any{"object": map[string]any{
				"id": "cs_test_attacker", "object": "checkout.session", "payment_status": "paid", "payment_intent": "pi_attacker",
				"amount_total": 1, "currency": "usd", "client_reference_id": ch.Order.Number,
			}},
		})
		require.NoError(t, err)
		header := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: "whsec_route", Timestamp: time.Now()}).Header
		req, err := http.NewRequest(http.MethodPost, b.Server.URL+"/webhooks/stripe", bytes.NewReader(payload))
		require.NoError(t, err)
		req.Header.Set("Stripe-Signature", header)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp.StatusCode, handlerstest.ReadBody(t, resp)
	}
	pending := func() {
		t.Helper()
		var status string
		var events int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT status, (SELECT count(*) FROM order_events e WHERE e.order_id = o.id AND e.kind <> 'created')
			FROM orders o WHERE o.id = $1`, ch.Order.ID).Scan(&status, &events))
		require.Equal(t, "pending", status)
		require.Zero(t, events)
	}

	code, body := post("evt_forged", time.Now())
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"received":true}`, body)
	pending()

	code, body = post("evt_ahead", time.Now().Add(10*time.Minute))
	require.Equal(t, http.StatusBadRequest, code, body)
	require.JSONEq(t, `{"error":{"code":"bad_signature","message":"The event's signature does not verify."}}`, body)
	pending()
}
