package billing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/stripepay"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

const webhookSecret = "whsec_kubebyon_test"

// stripeShop is a shop that takes Stripe (and the other methods given),
// against a real stripe-mock.
func stripeShop(t *testing.T, methods ...string) *shop {
	t.Helper()
	st := billing.DefaultSettings()
	st.Methods = append([]string{billing.MethodStripe}, methods...)
	st.ManualInstructions = "Transfer to IBAN XX00 0000."
	st.StripeSecretKey, st.StripeWebhookSecret = testenv.StripeMockKey, webhookSecret
	s := newShop(t, st)
	s.svc.StripeURL = testenv.StripeMock(t)
	return s
}

// deliver signs an event about obj as Stripe would, now on the shop's
// clock, and hands it over.
func (s *shop) deliver(t *testing.T, id, typ string, obj map[string]any, secret string) error {
	t.Helper()
	return s.deliverAt(t, id, typ, obj, secret, s.now(), s.now())
}

// deliverAt is deliver of an event created at created, signed at signed.
func (s *shop) deliverAt(t *testing.T, id, typ string, obj map[string]any, secret string, created, signed time.Time) error {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": "2024-06-20", "created": created.Unix(), "type": typ,
		"livemode": false, "data": map[string]any{"object": obj},
	})
	require.NoError(t, err)
	header := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: signed}).Header
	return s.svc.StripeEvent(context.Background(), payload, header)
}

// session is the Checkout Session of o (as kept on it) in payment status.
func session(o queries.Order, status string) map[string]any {
	return map[string]any{
		"id": o.StripeSessionID.String, "object": "checkout.session", "payment_status": status, "payment_intent": "pi_" + o.Number,
		"amount_total": o.Total, "currency": strings.ToLower(o.Currency),
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

	ch, err := s.svc.Choose(ctx, s.personal(t, user), s.pro.ID, billing.Monthly, billing.MethodStripe, audit.Actor{UserID: user})
	require.NoError(t, err)
	_, err = s.svc.Choose(ctx, s.personal(t, user), s.pro.ID, billing.Monthly, billing.MethodManual, audit.Actor{UserID: user})
	require.ErrorIs(t, err, billing.ErrMethod, "manual is off")
	url, err := s.svc.Checkout(ctx, s.personal(t, user), ch.Order.ID, "card@example.com", "https://kb.example/billing/orders/1")
	require.NoError(t, err)
	require.NotEmpty(t, url)
	o, err := q.OrderGet(ctx, ch.Order.ID)
	require.NoError(t, err)
	require.True(t, o.StripeSessionID.Valid)
	stranger := person(t, s.pool, "stranger@example.com", "user")
	_, err = s.svc.Checkout(ctx, s.personal(t, stranger), ch.Order.ID, "x@example.com", "https://kb.example/")
	require.ErrorIs(t, err, billing.ErrOrderNotFound, "another organization's order")

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
	charge := map[string]any{"id": "ch_1", "object": "charge", "payment_intent": "pi_" + o.Number, "amount": o.Total, "currency": "usd",
		"amount_refunded": o.Total, "metadata": map[string]any{"order_number": o.Number}}
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

// orderUntouched asserts that o is as it was: pending, unpaid, with no
// Stripe event in its history, and its user's subscription as sub.
func (s *shop) orderUntouched(t *testing.T, o queries.Order, sub queries.Subscription) {
	t.Helper()
	ctx := context.Background()
	now, err := queries.New(s.pool).OrderGet(ctx, o.ID)
	require.NoError(t, err)
	require.Equal(t, "pending", now.Status)
	require.False(t, now.PaidAt.Valid)
	require.Equal(t, o.Reference, now.Reference)
	require.Equal(t, o.StripeSessionID, now.StripeSessionID)
	var stripeEvents int
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM order_events WHERE order_id = $1 AND (stripe_event_id IS NOT NULL OR kind = 'paid')`, o.ID).Scan(&stripeEvents))
	require.Zero(t, stripeEvents)
	require.Equal(t, sub, s.sub(t, o.UserID))
}

// TestStripeEventForgedSession: issue 35's attack. A correctly signed
// checkout.session.completed for 1 cent, of a session the platform never
// created, whose client_reference_id (anyone's to set, on a payment link
// of the same Stripe account) names another user's manual order of
// USD 10.00, is refused: the order stays pending and its user's plan as
// it was. So is one that names the order in its metadata too, and a
// refund of a charge the order was not paid with.
func TestStripeEventForgedSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := stripeShop(t, billing.MethodManual)
	s.at(time.Now().UTC().Truncate(time.Second))
	victim := person(t, s.pool, "victim@example.com", "user")
	ch, err := s.svc.Choose(ctx, s.personal(t, victim), s.team.ID, billing.Monthly, billing.MethodManual, audit.Actor{UserID: victim})
	require.NoError(t, err)
	o := ch.Order
	require.Equal(t, int64(1000), o.Total)
	require.False(t, o.StripeSessionID.Valid, "a manual order has no session")
	sub := s.sub(t, victim)

	forged := map[string]any{
		"id": "cs_test_attacker", "object": "checkout.session", "payment_status": "paid", "status": "complete",
		"payment_intent": "pi_attacker", "amount_total": 1, "currency": "usd", "client_reference_id": o.Number,
	}
	err = s.deliver(t, "evt_forged", "checkout.session.completed", forged, webhookSecret)
	require.ErrorIs(t, err, billing.ErrEventRefused)
	require.ErrorContains(t, err, o.Number)
	s.orderUntouched(t, o, sub)

	forged["metadata"] = map[string]any{"order_number": o.Number}
	forged["amount_total"] = o.Total
	err = s.deliver(t, "evt_forged_metadata", "checkout.session.async_payment_succeeded", forged, webhookSecret)
	require.ErrorIs(t, err, billing.ErrEventRefused)
	s.orderUntouched(t, o, sub)

	charge := map[string]any{"id": "ch_attacker", "object": "charge", "payment_intent": "pi_attacker", "amount": 1, "currency": "usd",
		"amount_refunded": 1, "metadata": map[string]any{"order_number": o.Number}}
	err = s.deliver(t, "evt_forged_refund", "charge.refunded", charge, webhookSecret)
	require.ErrorIs(t, err, billing.ErrEventRefused)
	s.orderUntouched(t, o, sub)

	// A session of someone else's on the same account, naming no order:
	// ignored.
	require.NoError(t, s.deliver(t, "evt_foreign", "checkout.session.completed",
		map[string]any{"id": "cs_test_foreign", "object": "checkout.session", "payment_status": "paid", "amount_total": 500, "currency": "usd"}, webhookSecret))
	s.orderUntouched(t, o, sub)
}

// TestStripeEventMustFitOrder: an event of the session opened for a
// Stripe order pays it only for the order's total in its currency (in
// Stripe's lower case), and only an order paid by Stripe; an event
// created or signed more than the clock skew ahead of the service's clock
// is refused as unsigned. None of them changes anything; the fitting one
// then pays.
func TestStripeEventMustFitOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := stripeShop(t, billing.MethodManual)
	q := queries.New(s.pool)
	s.at(time.Now().UTC().Truncate(time.Second))
	user := person(t, s.pool, "card@example.com", "user")
	ch, err := s.svc.Choose(ctx, s.personal(t, user), s.team.ID, billing.Monthly, billing.MethodStripe, audit.Actor{UserID: user})
	require.NoError(t, err)
	_, err = s.svc.Checkout(ctx, s.personal(t, user), ch.Order.ID, "card@example.com", "https://kb.example/billing/orders/1")
	require.NoError(t, err)
	o, err := q.OrderGet(ctx, ch.Order.ID)
	require.NoError(t, err)
	require.True(t, o.StripeSessionID.Valid)
	sub := s.sub(t, user)

	cheap := session(o, "paid")
	cheap["amount_total"] = 1
	err = s.deliver(t, "evt_cheap", "checkout.session.completed", cheap, webhookSecret)
	require.ErrorIs(t, err, billing.ErrEventRefused)
	require.ErrorContains(t, err, "usd 1 for order "+o.Number+" of USD 1000")
	s.orderUntouched(t, o, sub)

	yen := session(o, "paid")
	yen["currency"] = "jpy"
	err = s.deliver(t, "evt_yen", "checkout.session.completed", yen, webhookSecret)
	require.ErrorIs(t, err, billing.ErrEventRefused)
	s.orderUntouched(t, o, sub)

	ahead := s.now().Add(stripepay.MaxClockSkew + time.Minute)
	err = s.deliverAt(t, "evt_created_ahead", "checkout.session.completed", session(o, "paid"), webhookSecret, ahead, s.now())
	require.ErrorIs(t, err, stripepay.ErrSignature)
	require.ErrorIs(t, err, stripepay.ErrFuture)
	s.orderUntouched(t, o, sub)
	err = s.deliverAt(t, "evt_signed_ahead", "checkout.session.completed", session(o, "paid"), webhookSecret, s.now(), ahead)
	require.ErrorIs(t, err, stripepay.ErrSignature)
	require.ErrorIs(t, err, stripepay.ErrFuture)
	s.orderUntouched(t, o, sub)

	// A manual order that a session points at (none does: Checkout opens
	// sessions for Stripe orders only) is not paid by it.
	other := person(t, s.pool, "manual@example.com", "user")
	mch, err := s.svc.Choose(ctx, s.personal(t, other), s.team.ID, billing.Monthly, billing.MethodManual, audit.Actor{UserID: other})
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, `UPDATE orders SET stripe_session_id = 'cs_test_on_manual' WHERE id = $1`, mch.Order.ID)
	require.NoError(t, err)
	m, err := q.OrderGet(ctx, mch.Order.ID)
	require.NoError(t, err)
	otherSub := s.sub(t, other)
	err = s.deliver(t, "evt_manual", "checkout.session.completed", session(m, "paid"), webhookSecret)
	require.ErrorIs(t, err, billing.ErrEventRefused)
	require.ErrorContains(t, err, "paid by manual")
	s.orderUntouched(t, m, otherSub)

	require.NoError(t, s.deliver(t, "evt_paid", "checkout.session.completed", session(o, "paid"), webhookSecret))
	o, err = q.OrderGet(ctx, o.ID)
	require.NoError(t, err)
	require.Equal(t, "paid", o.Status)
	require.Equal(t, s.team.ID, s.sub(t, user).PlanID)

	// A refund of the charge in another currency, or of more than the
	// order's total, is refused too.
	charge := map[string]any{"id": "ch_1", "object": "charge", "payment_intent": "pi_" + o.Number, "amount": o.Total, "currency": "eur",
		"amount_refunded": o.Total}
	err = s.deliver(t, "evt_refund_eur", "charge.refunded", charge, webhookSecret)
	require.ErrorIs(t, err, billing.ErrEventRefused)
	charge["currency"], charge["amount_refunded"] = "usd", o.Total+1
	err = s.deliver(t, "evt_refund_more", "charge.refunded", charge, webhookSecret)
	require.ErrorIs(t, err, billing.ErrEventRefused)
	o, err = q.OrderGet(ctx, o.ID)
	require.NoError(t, err)
	require.Equal(t, "paid", o.Status)
	require.Zero(t, o.RefundedAmount)
}

// sessionStatuses stands in front of the shop's stripe-mock (where every
// session is open) and gives the sessions it holds the status it holds.
type sessionStatuses struct {
	mu sync.Mutex
	m  map[string]string
}

func (ss *sessionStatuses) set(id, status string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.m[id] = status
}

func (s *shop) sessionStatuses(t *testing.T) *sessionStatuses {
	t.Helper()
	ss := &sessionStatuses{m: map[string]string{}}
	target, err := url.Parse(s.svc.StripeURL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		ss.mu.Lock()
		status, ok := ss.m[path.Base(r.Request.URL.Path)]
		ss.mu.Unlock()
		if r.Request.Method != http.MethodGet || !ok {
			return nil
		}
		var obj map[string]any
		if err := json.NewDecoder(r.Body).Decode(&obj); err != nil {
			return err
		}
		obj["status"] = status
		b, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		r.Header.Del("Content-Length")
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	s.svc.StripeURL = srv.URL
	return ss
}

// TestStripeCheckoutOneSession: an order has one Checkout Session at a
// time, so that the one its payment comes from is the one kept. Pay now
// again goes back to the open session; to the order page while it is
// complete; only once it expired, or its payment failed, is another
// opened. A session is replaced only if it is still the one read.
func TestStripeCheckoutOneSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := stripeShop(t)
	statuses := s.sessionStatuses(t)
	q := queries.New(s.pool)
	s.at(time.Now().UTC().Truncate(time.Second))
	user := person(t, s.pool, "card@example.com", "user")
	ch, err := s.svc.Choose(ctx, s.personal(t, user), s.team.ID, billing.Monthly, billing.MethodStripe, audit.Actor{UserID: user})
	require.NoError(t, err)
	const page = "https://kb.example/billing/orders/1"
	kept := func() string {
		t.Helper()
		o, err := q.OrderGet(ctx, ch.Order.ID)
		require.NoError(t, err)
		require.True(t, o.StripeSessionID.Valid)
		return o.StripeSessionID.String
	}

	_, err = s.svc.Checkout(ctx, s.personal(t, user), ch.Order.ID, "card@example.com", page)
	require.NoError(t, err)
	id := kept()
	again, err := s.svc.Checkout(ctx, s.personal(t, user), ch.Order.ID, "card@example.com", page)
	require.NoError(t, err)
	require.Regexp(t, `^https://checkout\.stripe\.com/`, again)
	require.Equal(t, id, kept(), "the open session")

	statuses.set(id, stripepay.CheckoutComplete)
	to, err := s.svc.Checkout(ctx, s.personal(t, user), ch.Order.ID, "card@example.com", page)
	require.NoError(t, err)
	require.Equal(t, page+"?checkout=done", to)
	require.Equal(t, id, kept())

	statuses.set(id, stripepay.CheckoutExpired)
	_, err = s.svc.Checkout(ctx, s.personal(t, user), ch.Order.ID, "card@example.com", page)
	require.NoError(t, err)
	next := kept()
	require.NotEqual(t, id, next)
	var checkouts int
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM order_events WHERE order_id = $1 AND kind = 'checkout'`, ch.Order.ID).Scan(&checkouts))
	require.Equal(t, 2, checkouts)

	// The expired session's events find no order now.
	old, err := q.OrderGet(ctx, ch.Order.ID)
	require.NoError(t, err)
	old.StripeSessionID.String = id
	require.ErrorIs(t, s.deliver(t, "evt_old", "checkout.session.completed", session(old, "paid"), webhookSecret), billing.ErrEventRefused)

	// The payment of the new one fails: Pay now opens another.
	statuses.set(next, stripepay.CheckoutComplete)
	o, err := q.OrderGet(ctx, ch.Order.ID)
	require.NoError(t, err)
	require.NoError(t, s.deliver(t, "evt_failed", "checkout.session.async_payment_failed", session(o, "unpaid"), webhookSecret))
	o, err = q.OrderGet(ctx, ch.Order.ID)
	require.NoError(t, err)
	require.Equal(t, "pending", o.Status)
	require.False(t, o.StripeSessionID.Valid)
	_, err = s.svc.Checkout(ctx, s.personal(t, user), ch.Order.ID, "card@example.com", page)
	require.NoError(t, err)
	third := kept()
	require.NotEqual(t, next, third)

	// Two Pay now at once: the second to keep its session finds the
	// order's changed and keeps nothing.
	_, err = q.OrderSetStripeSession(ctx, queries.OrderSetStripeSessionParams{
		ID: o.ID, StripeSessionID: pgtype.Text{String: "cs_test_late", Valid: true}, Previous: o.StripeSessionID,
	})
	require.ErrorIs(t, err, pgx.ErrNoRows)
	require.Equal(t, third, kept())
}

// TestStripePaymentMethods: a Checkout offers the payment methods the
// admin chose (cards alone before any choice); stripepay's tests show
// each offered only in the currencies it takes.
func TestStripePaymentMethods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := stripeShop(t)
	target, err := url.Parse(s.svc.StripeURL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var sent []url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/v1/checkout/sessions" && r.Method == http.MethodPost {
			form, _ := url.ParseQuery(string(body))
			mu.Lock()
			sent = append(sent, form)
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.svc.StripeURL = srv.URL
	methodsOfLast := func() []string {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, sent)
		var out []string
		for i := 0; ; i++ {
			m := sent[len(sent)-1].Get(fmt.Sprintf("payment_method_types[%d]", i))
			if m == "" {
				return out
			}
			out = append(out, m)
		}
	}
	pay := func(user, plan int64) error {
		t.Helper()
		ch, err := s.svc.Choose(ctx, s.personal(t, user), plan, billing.Monthly, billing.MethodStripe, audit.Actor{UserID: user})
		if err != nil {
			return err
		}
		_, err = s.svc.Checkout(ctx, s.personal(t, user), ch.Order.ID, "", "https://kb.example/billing")
		return err
	}

	// Before the admin chose: cards alone, whatever the currency.
	require.NoError(t, pay(person(t, s.pool, "cny-buyer@example.com", "user"), s.cny.ID))
	require.Equal(t, []string{"card"}, methodsOfLast())

	st, err := billing.LoadSettings(ctx, queries.New(s.pool), s.svc.Box)
	require.NoError(t, err)
	st.StripeMethods = []string{stripepay.MethodAlipay, stripepay.MethodWeChatPay}
	require.NoError(t, s.svc.SaveSettings(ctx, st, s.admin))

	require.NoError(t, pay(person(t, s.pool, "usd-buyer@example.com", "user"), s.pro.ID))
	require.Equal(t, []string{"alipay", "wechat_pay"}, methodsOfLast())
	require.NoError(t, pay(person(t, s.pool, "cny-wallet@example.com", "user"), s.cny.ID))
	require.Equal(t, []string{"alipay", "wechat_pay"}, methodsOfLast())

	// Chosen, the list cannot be empty; an unknown method is refused.
	st.StripeMethods = []string{}
	require.ErrorContains(t, s.svc.SaveSettings(ctx, st, s.admin), "ErrBillingStripeMethodsRequired")
	st.StripeMethods = []string{"paypal"}
	require.ErrorContains(t, s.svc.SaveSettings(ctx, st, s.admin), "ErrBillingStripeMethod")
}
