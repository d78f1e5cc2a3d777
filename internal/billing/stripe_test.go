package billing_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/stripepay"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

const webhookSecret = "whsec_kubebyon_test"

// stripeShop is a shop that takes Stripe, against a real stripe-mock.
func stripeShop(t *testing.T) *shop {
	t.Helper()
	st := billing.DefaultSettings()
	st.Methods = []string{billing.MethodStripe}
	st.StripeSecretKey, st.StripeWebhookSecret = testenv.StripeMockKey, webhookSecret
	s := newShop(t, st)
	s.svc.StripeURL = testenv.StripeMock(t)
	return s
}

// deliver signs an event about obj as Stripe would and hands it over.
func (s *shop) deliver(t *testing.T, id, typ string, obj map[string]any, secret string) error {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": "2024-06-20", "created": time.Now().Unix(), "type": typ,
		"livemode": false, "data": map[string]any{"object": obj},
	})
	require.NoError(t, err)
	header := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: time.Now()}).Header
	return s.svc.StripeEvent(context.Background(), payload, header)
}

func session(o queries.Order, status string) map[string]any {
	return map[string]any{
		"id": o.StripeSessionID.String, "object": "checkout.session", "payment_status": status, "payment_intent": "pi_" + o.Number,
		"client_reference_id": o.Number, "metadata": map[string]any{"order_number": o.Number},
	}
}

// TestStripeOrders: a Stripe order opens a Checkout Session at
// stripe-mock; webhook deliveries with a bad signature change nothing; a
// paid event applies once whether it comes twice at once, late, or after
// an unpaid completion; an expiry after the payment changes nothing; a
// refund event ends the period it paid for; an admin's partial refund
// goes through Stripe and shortens it.
func TestStripeOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := stripeShop(t)
	q := queries.New(s.pool)
	user := person(t, s.pool, "card@example.com", "user")
	s.at(time.Now().UTC().Truncate(time.Second))

	ch, err := s.svc.Choose(ctx, user, s.pro.ID, billing.Monthly, billing.MethodStripe, audit.Actor{UserID: user})
	require.NoError(t, err)
	_, err = s.svc.Choose(ctx, user, s.pro.ID, billing.Monthly, billing.MethodManual, audit.Actor{UserID: user})
	require.ErrorIs(t, err, billing.ErrMethod, "manual is off")
	url, err := s.svc.Checkout(ctx, user, ch.Order.ID, "card@example.com", "https://kb.example/billing/orders/1")
	require.NoError(t, err)
	require.NotEmpty(t, url)
	o, err := q.OrderGet(ctx, ch.Order.ID)
	require.NoError(t, err)
	require.True(t, o.StripeSessionID.Valid)
	_, err = s.svc.Checkout(ctx, user+1000, ch.Order.ID, "x@example.com", "https://kb.example/")
	require.ErrorIs(t, err, billing.ErrOrderNotFound, "another user's order")

	// A bad signature: refused, nothing recorded.
	err = s.deliver(t, "evt_forged", "checkout.session.completed", session(o, "paid"), "whsec_someone_else")
	require.ErrorIs(t, err, stripepay.ErrSignature)
	o, err = q.OrderGet(ctx, o.ID)
	require.NoError(t, err)
	require.Equal(t, "pending", o.Status)

	// Completed but unpaid (a wallet that confirms later): still pending.
	require.NoError(t, s.deliver(t, "evt_unpaid", "checkout.session.completed", session(o, "unpaid"), webhookSecret))
	o, err = q.OrderGet(ctx, o.ID)
	require.NoError(t, err)
	require.Equal(t, "pending", o.Status)

	// The payment succeeds, delivered twice at once: one period.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			errs[i] = s.deliver(t, "evt_paid", "checkout.session.async_payment_succeeded", session(o, "paid"), webhookSecret)
		})
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	sub := s.sub(t, user)
	require.Equal(t, s.pro.ID, sub.PlanID)
	end := sub.CurrentPeriodEnd.Time
	require.Equal(t, s.now().AddDate(0, 1, 0), end.UTC())

	// Late and out of order: another paid event, then the expiry.
	require.NoError(t, s.deliver(t, "evt_paid_again", "checkout.session.completed", session(o, "paid"), webhookSecret))
	require.NoError(t, s.deliver(t, "evt_expired", "checkout.session.expired", session(o, "unpaid"), webhookSecret))
	o, err = q.OrderGet(ctx, o.ID)
	require.NoError(t, err)
	require.Equal(t, "paid", o.Status)
	require.Equal(t, "pi_"+o.Number, o.Reference)
	require.Equal(t, end, s.sub(t, user).CurrentPeriodEnd.Time, "paid once")
	var paid, events int
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'paid'), count(DISTINCT stripe_event_id) FROM order_events WHERE order_id = $1`, o.ID).Scan(&paid, &events))
	require.Equal(t, 1, paid)
	require.Equal(t, 4, events, "evt_unpaid, evt_paid, evt_paid_again, evt_expired")

	// An admin refunds a third through Stripe: the period is shortened by
	// a third.
	_, err = s.svc.Refund(ctx, o.ID, o.Total+1, "too much", s.admin)
	require.ErrorIs(t, err, billing.ErrRefundAmount)
	third := o.Total / 3
	o, err = s.svc.Refund(ctx, o.ID, third, "outage in March", s.admin)
	require.NoError(t, err)
	require.Equal(t, "paid", o.Status)
	require.Equal(t, third, o.RefundedAmount)
	shortened := s.sub(t, user).CurrentPeriodEnd.Time
	full := end.Sub(o.PeriodStart.Time)
	require.InDelta(t, float64(full*2/3), float64(shortened.Sub(o.PeriodStart.Time)), float64(time.Minute))

	// Stripe tells of the rest refunded (from its dashboard): the plan
	// ends at once.
	charge := map[string]any{"id": "ch_1", "object": "charge", "payment_intent": "pi_" + o.Number, "amount_refunded": o.Total,
		"metadata": map[string]any{"order_number": o.Number}}
	require.NoError(t, s.deliver(t, "evt_refund", "charge.refunded", charge, webhookSecret))
	require.NoError(t, s.deliver(t, "evt_refund", "charge.refunded", charge, webhookSecret), "a redelivery")
	o, err = q.OrderGet(ctx, o.ID)
	require.NoError(t, err)
	require.Equal(t, "refunded", o.Status)
	require.Equal(t, o.Total, o.RefundedAmount)
	def, err := q.PlanDefault(ctx)
	require.NoError(t, err)
	require.Equal(t, def.ID, s.sub(t, user).PlanID)
	require.Equal(t, "cancelled", s.sub(t, user).Status)
}
