package stripepay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/kubebyon/kubebyon/internal/stripepay"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testBundle is a Client talking to a stripe-mock of the test's own
// through a proxy that keeps the form of every request, so tests see what
// was sent as well as what came back.
type testBundle struct {
	client  *stripepay.Client
	mockURL string // stripe-mock itself, for fixtures
	proxy   string // the proxy's URL, for clients of other keys

	mu       sync.Mutex
	requests []request
}

type request struct {
	path string
	form url.Values
}

// setup puts a recording proxy in front of mockURL (testenv.StripeMock's).
// Subtests share their parent's stripe-mock, which keeps no state, since
// each one takes a second or more of CPU to start; each has its own proxy.
func setup(t *testing.T, mockURL string) *testBundle {
	t.Helper()
	b := &testBundle{mockURL: mockURL}
	target, err := url.Parse(b.mockURL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		b.requests = append(b.requests, request{path: r.URL.Path, form: form})
		b.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	b.proxy = srv.URL
	b.client = stripepay.New(testenv.StripeMockKey, srv.URL)
	return b
}

// sent is every request that reached stripe-mock.
func (b *testBundle) sent() []request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]request(nil), b.requests...)
}

// onlyRequest is the one request that reached stripe-mock.
func (b *testBundle) onlyRequest(t *testing.T, path string) url.Values {
	t.Helper()
	reqs := b.sent()
	require.Len(t, reqs, 1)
	require.Equal(t, path, reqs[0].path)
	return reqs[0].form
}

// flat is form as one value a key, as Stripe's form encoding sends it.
func flat(t *testing.T, form url.Values) map[string]string {
	t.Helper()
	m := make(map[string]string, len(form))
	for k, vs := range form {
		require.Len(t, vs, 1, k)
		m[k] = vs[0]
	}
	return m
}

func order(number, currency string, amount int64) stripepay.CheckoutInput {
	return stripepay.CheckoutInput{
		OrderNumber:   number,
		Amount:        amount,
		Currency:      currency,
		ProductName:   "Pro plan, 1 month",
		CustomerEmail: "buyer@example.com",
		SuccessURL:    "https://kubebyon.example/billing/orders/" + number + "?paid=1",
		CancelURL:     "https://kubebyon.example/billing/orders/" + number,
		Methods:       []string{stripepay.MethodCard},
	}
}

// TestCreateCheckout: a session for one line item in the order's currency,
// tagged with the order number, offering cards and the wallets Stripe
// takes in that currency. stripe-mock answering at all means it found
// every parameter's name, type and allowed value valid.
func TestCreateCheckout(t *testing.T) {
	t.Parallel()
	mock := testenv.StripeMock(t)
	all := stripepay.Methods()
	tests := []struct {
		currency string
		amount   int64
		allowed  []string // by the admin
		wantCur  string
		methods  []string
	}{
		{"USD", 1999, all, "usd", []string{"card", "alipay", "wechat_pay"}},
		{"CNY", 9900, all, "cny", []string{"card", "alipay", "wechat_pay"}},
		{"nzd", 1500, all, "nzd", []string{"card", "alipay"}},
		{"CHF", 1500, all, "chf", []string{"card", "wechat_pay"}},
		{"INR", 150000, all, "inr", []string{"card"}},
		// An account without the wallets: cards alone, in every currency.
		{"CNY", 9900, []string{"card"}, "cny", []string{"card"}},
		// Wallets alone, where they take the currency.
		{"EUR", 2500, []string{"alipay"}, "eur", []string{"alipay"}},
	}
	for _, tt := range tests {
		t.Run(tt.currency+"/"+strings.Join(tt.allowed, "+"), func(t *testing.T) {
			t.Parallel()
			b := setup(t, mock)
			in := order("KB-"+tt.currency, tt.currency, tt.amount)
			in.Methods = tt.allowed

			co, err := b.client.CreateCheckout(context.Background(), in)
			require.NoError(t, err)
			require.Regexp(t, `^cs_test_\w+$`, co.ID)
			require.Regexp(t, `^https://checkout\.stripe\.com/`, co.URL)
			require.Equal(t, stripepay.CheckoutOpen, co.Status)

			form := b.onlyRequest(t, "/v1/checkout/sessions")
			want := map[string]string{
				"mode":                   "payment",
				"client_reference_id":    in.OrderNumber,
				"metadata[order_number]": in.OrderNumber,
				"payment_intent_data[metadata][order_number]":   in.OrderNumber,
				"line_items[0][quantity]":                       "1",
				"line_items[0][price_data][currency]":           tt.wantCur,
				"line_items[0][price_data][unit_amount]":        strconv.FormatInt(tt.amount, 10),
				"line_items[0][price_data][product_data][name]": in.ProductName,
				"customer_email":                                in.CustomerEmail,
				"success_url":                                   in.SuccessURL,
				"cancel_url":                                    in.CancelURL,
			}
			for i, m := range tt.methods {
				want["payment_method_types["+strconv.Itoa(i)+"]"] = m
			}
			if slices.Contains(tt.methods, "wechat_pay") {
				want["payment_method_options[wechat_pay][client]"] = "web"
			}
			require.Equal(t, want, flat(t, form))
		})
	}
}

// TestCheckoutSession: a session is read back by its id, with its status
// and URL.
func TestCheckoutSession(t *testing.T) {
	t.Parallel()
	b := setup(t, testenv.StripeMock(t))

	co, err := b.client.CheckoutSession(context.Background(), "cs_test_kept")
	require.NoError(t, err)
	require.Equal(t, "cs_test_kept", co.ID)
	require.Equal(t, stripepay.CheckoutOpen, co.Status)
	require.Regexp(t, `^https://checkout\.stripe\.com/`, co.URL)
	b.onlyRequest(t, "/v1/checkout/sessions/cs_test_kept")
}

// TestCheckoutExpiry: expires_at is sent only when asked for, and moved
// into the 30 minutes to 24 hours Stripe accepts, a minute inside each end.
func TestCheckoutExpiry(t *testing.T) {
	t.Parallel()
	mock := testenv.StripeMock(t)
	const (
		earliest = 31 * time.Minute
		latest   = 24*time.Hour - time.Minute
	)
	tests := []struct {
		name string
		in   time.Duration // from now; 0 is no expiry
		want time.Duration // from now; 0 is no expires_at
	}{
		{"none", 0, 0},
		{"past", -time.Hour, earliest},
		{"too soon", 5 * time.Minute, earliest},
		{"in range", 2 * time.Hour, 2 * time.Hour},
		{"too late", 48 * time.Hour, latest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, mock)
			in := order("KB-EXP", "USD", 1000)
			before := time.Now()
			if tt.in != 0 {
				in.ExpiresAt = before.Add(tt.in)
			}
			_, err := b.client.CreateCheckout(context.Background(), in)
			require.NoError(t, err)
			after := time.Now()

			form := b.onlyRequest(t, "/v1/checkout/sessions")
			if tt.want == 0 {
				require.NotContains(t, form, "expires_at")
				return
			}
			got, err := strconv.ParseInt(form.Get("expires_at"), 10, 64)
			require.NoError(t, err)
			require.GreaterOrEqual(t, got, before.Add(tt.want).Unix())
			require.LessOrEqual(t, got, after.Add(tt.want).Unix())
		})
	}
}

// TestCreateCheckoutRefusesBadInput: what stripe-mock would let through
// (it checks neither amounts nor currency codes nor required fields) is
// refused before any request is sent, the error naming the order.
func TestCreateCheckoutRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, testenv.StripeMock(t))
	tests := []struct {
		name   string
		change func(*stripepay.CheckoutInput)
		want   string
	}{
		{"zero amount", func(in *stripepay.CheckoutInput) { in.Amount = 0 }, "amount 0 is not positive"},
		{"negative amount", func(in *stripepay.CheckoutInput) { in.Amount = -100 }, "amount -100 is not positive"},
		{"empty currency", func(in *stripepay.CheckoutInput) { in.Currency = "" }, `currency "" is not`},
		{"two letters", func(in *stripepay.CheckoutInput) { in.Currency = "US" }, `currency "US" is not`},
		{"four letters", func(in *stripepay.CheckoutInput) { in.Currency = "USDT" }, `currency "USDT" is not`},
		{"symbol", func(in *stripepay.CheckoutInput) { in.Currency = "U$D" }, `currency "U$D" is not`},
		{"no order number", func(in *stripepay.CheckoutInput) { in.OrderNumber = "" }, "no order number"},
		{"no product", func(in *stripepay.CheckoutInput) { in.ProductName = "" }, "no product name"},
		{"no success URL", func(in *stripepay.CheckoutInput) { in.SuccessURL = "" }, "no success URL"},
		{"no method allowed", func(in *stripepay.CheckoutInput) { in.Methods = nil }, "none of the payment methods [] takes USD"},
		{"no allowed method takes the currency", func(in *stripepay.CheckoutInput) {
			in.Methods, in.Currency = []string{stripepay.MethodAlipay}, "chf"
		}, "none of the payment methods [alipay] takes CHF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := order("KB-BAD", "USD", 1000)
			tt.change(&in)
			_, err := b.client.CreateCheckout(context.Background(), in)
			require.ErrorContains(t, err, tt.want)
			require.ErrorContains(t, err, "stripe checkout for order")
		})
	}
	require.Empty(t, b.sent())
}

// TestStripeRefusal: an error from Stripe itself (stripe-mock refuses a
// live-mode key) comes back wrapped, as a *stripe.Error.
func TestStripeRefusal(t *testing.T) {
	t.Parallel()
	b := setup(t, testenv.StripeMock(t))
	live := stripepay.New("sk_live_kubebyon", b.proxy)

	_, err := live.CreateCheckout(context.Background(), order("KB-LIVE", "USD", 1000))
	require.ErrorContains(t, err, `stripe checkout for order "KB-LIVE"`)
	var se *stripe.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, stripe.ErrorTypeInvalidRequest, se.Type)
	require.Equal(t, http.StatusUnauthorized, se.HTTPStatusCode)

	_, err = live.Refund(context.Background(), "pi_live", 500)
	require.ErrorContains(t, err, "stripe refund of 500 from pi_live")
	require.ErrorAs(t, err, &se)
}

// TestRefund: a refund of part of a PaymentIntent's payment; no request
// for a refund of nothing or of no payment.
func TestRefund(t *testing.T) {
	t.Parallel()
	b := setup(t, testenv.StripeMock(t))

	id, err := b.client.Refund(context.Background(), "pi_3Test", 2500)
	require.NoError(t, err)
	require.Regexp(t, `^re_\w+$`, id)
	require.Equal(t, map[string]string{"payment_intent": "pi_3Test", "amount": "2500"}, flat(t, b.onlyRequest(t, "/v1/refunds")))

	_, err = b.client.Refund(context.Background(), "pi_3Test", 0)
	require.ErrorContains(t, err, "amount 0 is not positive")
	_, err = b.client.Refund(context.Background(), "", 100)
	require.ErrorContains(t, err, "no payment intent")
	require.Len(t, b.sent(), 1)
}

const webhookSecret = "whsec_kubebyon_test"

// fixture is the object stripe-mock returns at path (a full object of
// Stripe's shape, as events carry), with fields replaced by set.
func fixture(t *testing.T, mockURL, path string, set map[string]any) map[string]any {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, mockURL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testenv.StripeMockKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var obj map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&obj))
	for k, v := range set {
		obj[k] = v
	}
	return obj
}

// eventPayload is a webhook body of type around obj, of an API version
// older than stripe-go's (as an account pinned to an old version sends).
func eventPayload(t *testing.T, id, typ string, created int64, obj map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id":          id,
		"object":      "event",
		"api_version": "2024-06-20",
		"created":     created,
		"type":        typ,
		"livemode":    false,
		"data":        map[string]any{"object": obj},
	})
	require.NoError(t, err)
	return b
}

func sign(payload []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at}).Header
}

// TestParseEvent: each handled type gives the session or charge fields
// the billing domain needs; any other type only its ID, type and time.
// Times are checked on the caller's clock, not the machine's.
func TestParseEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, testenv.StripeMock(t))
	session := func(set map[string]any) map[string]any {
		return fixture(t, b.mockURL, "/v1/checkout/sessions/cs_test_fixture", set)
	}
	charge := func(set map[string]any) map[string]any {
		return fixture(t, b.mockURL, "/v1/charges/ch_fixture", set)
	}
	created := time.Date(2026, 12, 1, 8, 30, 0, 0, time.UTC)
	tests := []struct {
		name string
		typ  string
		obj  map[string]any
		want stripepay.Event
	}{
		{
			"completed, paid", stripepay.EventCheckoutCompleted,
			session(map[string]any{"id": "cs_test_1", "payment_intent": "pi_1", "payment_status": "paid", "client_reference_id": "KB-1", "metadata": map[string]any{"order_number": "KB-1"},
				"amount_total": 9900, "currency": "cny"}),
			stripepay.Event{SessionID: "cs_test_1", PaymentIntentID: "pi_1", OrderNumber: "KB-1", PaymentStatus: "paid", Amount: 9900, Currency: "cny"},
		},
		{
			"completed, payment pending, order from client_reference_id", stripepay.EventCheckoutCompleted,
			session(map[string]any{"id": "cs_test_2", "payment_intent": "pi_2", "payment_status": "unpaid", "client_reference_id": "KB-2", "metadata": map[string]any{}}),
			stripepay.Event{SessionID: "cs_test_2", PaymentIntentID: "pi_2", OrderNumber: "KB-2", PaymentStatus: "unpaid"},
		},
		{
			"async payment succeeded", stripepay.EventCheckoutAsyncPaymentSucceeded,
			session(map[string]any{"id": "cs_test_3", "payment_intent": "pi_3", "payment_status": "paid", "client_reference_id": "KB-3", "metadata": map[string]any{"order_number": "KB-3"}}),
			stripepay.Event{SessionID: "cs_test_3", PaymentIntentID: "pi_3", OrderNumber: "KB-3", PaymentStatus: "paid"},
		},
		{
			"async payment failed", stripepay.EventCheckoutAsyncPaymentFailed,
			session(map[string]any{"id": "cs_test_4", "payment_intent": "pi_4", "payment_status": "unpaid", "client_reference_id": "KB-4", "metadata": map[string]any{"order_number": "KB-4"}}),
			stripepay.Event{SessionID: "cs_test_4", PaymentIntentID: "pi_4", OrderNumber: "KB-4", PaymentStatus: "unpaid"},
		},
		{
			"expired, never paid", stripepay.EventCheckoutExpired,
			session(map[string]any{"id": "cs_test_5", "payment_intent": nil, "payment_status": "unpaid", "status": "expired", "client_reference_id": "KB-5", "metadata": map[string]any{"order_number": "KB-5"}}),
			stripepay.Event{SessionID: "cs_test_5", OrderNumber: "KB-5", PaymentStatus: "unpaid"},
		},
		{
			"charge refunded", stripepay.EventChargeRefunded,
			charge(map[string]any{"id": "ch_6", "payment_intent": "pi_6", "amount": 9900, "currency": "usd", "amount_refunded": 2500, "refunded": false, "metadata": map[string]any{"order_number": "KB-6"}}),
			stripepay.Event{PaymentIntentID: "pi_6", OrderNumber: "KB-6", Amount: 9900, Currency: "usd", AmountRefunded: 2500},
		},
		{
			"charge refunded, no order in metadata", stripepay.EventChargeRefunded,
			charge(map[string]any{"id": "ch_7", "payment_intent": "pi_7", "amount": 9900, "currency": "usd", "amount_refunded": 9900, "refunded": true, "metadata": map[string]any{}}),
			stripepay.Event{PaymentIntentID: "pi_7", Amount: 9900, Currency: "usd", AmountRefunded: 9900},
		},
		{
			"another type", "customer.created",
			fixture(t, b.mockURL, "/v1/customers/cus_fixture", map[string]any{"metadata": map[string]any{"order_number": "KB-8"}}),
			stripepay.Event{},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := "evt_" + strconv.Itoa(i)
			payload := eventPayload(t, id, tt.typ, created.Unix(), tt.obj)

			got, err := stripepay.ParseEvent(payload, sign(payload, webhookSecret, created), webhookSecret, created.Add(time.Minute))
			require.NoError(t, err)
			want := tt.want
			want.ID, want.Type, want.Created = id, tt.typ, created
			require.Equal(t, want, got)
		})
	}
}

// TestParseEventRefusesBadSignature: a payload not signed with the
// endpoint's secret, changed after signing, signed too long ago, or
// signed or created more than the clock skew ahead of now is refused
// with ErrSignature; within the skew it is taken; a well-signed body that
// is not an event is refused for that.
func TestParseEventRefusesBadSignature(t *testing.T) {
	t.Parallel()
	now := time.Now()
	payloadAt := func(created time.Time) []byte {
		return eventPayload(t, "evt_sig", stripepay.EventCheckoutCompleted, created.Unix(),
			map[string]any{"id": "cs_test_sig", "object": "checkout.session", "metadata": map[string]any{"order_number": "KB-SIG"}})
	}
	payload := payloadAt(now)
	ahead := payloadAt(now.Add(stripepay.MaxClockSkew + time.Minute))
	tests := []struct {
		name    string
		payload []byte
		header  string
		cause   error
	}{
		{"other secret", payload, sign(payload, "whsec_other", now), webhook.ErrNoValidSignature},
		{"changed after signing", bytes.Replace(payload, []byte("KB-SIG"), []byte("KB-XXX"), 1), sign(payload, webhookSecret, now), webhook.ErrNoValidSignature},
		{"stale timestamp", payload, sign(payload, webhookSecret, now.Add(-stripepay.Tolerance-time.Minute)), webhook.ErrTooOld},
		{"signed in the future", payload, sign(payload, webhookSecret, now.Add(stripepay.MaxClockSkew+time.Minute)), stripepay.ErrFuture},
		{"created in the future", ahead, sign(ahead, webhookSecret, now), stripepay.ErrFuture},
		{"no header", payload, "", webhook.ErrNotSigned},
		{"malformed header", payload, "t=yesterday,v1=00", webhook.ErrInvalidHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := stripepay.ParseEvent(tt.payload, tt.header, webhookSecret, now)
			require.ErrorIs(t, err, stripepay.ErrSignature)
			require.ErrorIs(t, err, tt.cause)
		})
	}

	// Stripe's clock a little ahead of ours: taken.
	skewed := payloadAt(now.Add(stripepay.MaxClockSkew - time.Minute))
	ev, err := stripepay.ParseEvent(skewed, sign(skewed, webhookSecret, now.Add(stripepay.MaxClockSkew-time.Minute)), webhookSecret, now)
	require.NoError(t, err)
	require.Equal(t, "cs_test_sig", ev.SessionID)

	notEvent := []byte(`{"id":"cs_test_sig","object":"checkout.session"}`)
	_, err = stripepay.ParseEvent(notEvent, sign(notEvent, webhookSecret, now), webhookSecret, now)
	require.Error(t, err)
	require.False(t, errors.Is(err, stripepay.ErrSignature), "%v", err)
}
