// Package stripepay takes payments through Stripe: a hosted Checkout page
// for an order, refunds, and the webhook events that tell what became of
// them. It holds no global state: each Client has its own key and backends.
package stripepay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/webhook"
)

// Client calls Stripe's API with one secret key.
type Client struct {
	sc *stripe.Client
}

// New returns a Client for secretKey. An empty baseURL means Stripe's API;
// any other (stripe-mock's, in tests) takes the place of every Stripe
// endpoint.
func New(secretKey, baseURL string) *Client {
	cfg := &stripe.BackendConfig{
		// Errors come back to the caller with context; the library's own
		// log lines would say the same thing twice, on stderr.
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if baseURL != "" {
		cfg.URL = stripe.String(baseURL)
	}
	return &Client{sc: stripe.NewClient(secretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg)))}
}

// metadataOrderNumber is the metadata key that carries our order number on
// the Checkout Session and on its PaymentIntent. Stripe copies a
// PaymentIntent's metadata onto the Charge it creates, so charge events
// carry it too.
const metadataOrderNumber = "order_number"

// CheckoutInput is one order to be paid on Stripe's hosted Checkout page.
type CheckoutInput struct {
	OrderNumber   string
	Amount        int64  // in the currency's minor units (cents, fen; yen have none)
	Currency      string // ISO 4217, e.g. "USD", "CNY"; either case
	ProductName   string
	CustomerEmail string // optional: prefilled on the page
	SuccessURL    string
	CancelURL     string    // optional
	ExpiresAt     time.Time // optional, Stripe's default is 24 hours; see checkoutExpiry
	// Methods are the payment methods the admin allows; the session
	// offers those that take Currency.
	Methods []string
}

// Checkout is a Checkout Session: while Status is CheckoutOpen, send the
// customer to URL.
type Checkout struct {
	ID     string
	URL    string
	Status string // CheckoutOpen, CheckoutComplete or CheckoutExpired
}

// A Checkout Session's status: open until it is paid for (complete, the
// payment made or, for a method that confirms later, under way) or
// expires.
const (
	CheckoutOpen     = string(stripe.CheckoutSessionStatusOpen)
	CheckoutComplete = string(stripe.CheckoutSessionStatusComplete)
	CheckoutExpired  = string(stripe.CheckoutSessionStatusExpired)
)

// Payment methods a Checkout session may offer.
const (
	MethodCard      = "card"
	MethodAlipay    = "alipay"
	MethodWeChatPay = "wechat_pay"
)

// methods are the payment methods the platform can offer, each with the
// presentment currencies Stripe lists for it in Checkout ("Determine
// compatibility" on docs.stripe.com/payments/alipay/accept-a-payment and
// docs.stripe.com/payments/wechat-pay/accept-a-payment; nil: every
// currency). Stripe refuses a session that names a method for a currency
// the method does not take, and every session that names a method the
// account has not turned on in its Dashboard: the admin chooses which to
// offer.
var methods = []struct {
	method     string
	currencies []string
}{
	{MethodCard, nil},
	{MethodAlipay, []string{"aud", "cad", "cny", "eur", "gbp", "hkd", "jpy", "myr", "nzd", "sgd", "usd"}},
	{MethodWeChatPay, []string{"aud", "cad", "chf", "cny", "dkk", "eur", "gbp", "hkd", "jpy", "nok", "sek", "sgd", "usd"}},
}

// Methods lists the payment methods the platform can offer, cards first.
func Methods() []string {
	out := make([]string, len(methods))
	for i, m := range methods {
		out[i] = m.method
	}
	return out
}

// Currencies are the currencies (upper case) method takes; nil for every
// currency, or for a method that is not one.
func Currencies(method string) []string {
	for _, m := range methods {
		if m.method == method && m.currencies != nil {
			out := make([]string, len(m.currencies))
			for i, c := range m.currencies {
				out[i] = strings.ToUpper(c)
			}
			return out
		}
	}
	return nil
}

// ValidMethod reports whether method is one the platform can offer.
func ValidMethod(method string) bool { return slices.Contains(Methods(), method) }

// MethodsFor are the methods of allowed (in the platform's order) that
// take currency, in either case.
func MethodsFor(allowed []string, currency string) []string {
	currency = strings.ToLower(currency)
	var out []string
	for _, m := range methods {
		if slices.Contains(allowed, m.method) && (m.currencies == nil || slices.Contains(m.currencies, currency)) {
			out = append(out, m.method)
		}
	}
	return out
}

// Stripe takes a session's expires_at only from 30 minutes to 24 hours
// after the session is created. The minute's margin on each side covers
// the time the request is in flight and a small difference between our
// clock and Stripe's.
const (
	minCheckoutExpiry = 30*time.Minute + time.Minute
	maxCheckoutExpiry = 24*time.Hour - time.Minute
)

// checkoutExpiry is at, moved into the window Stripe accepts from now: an
// earlier time becomes the earliest Stripe takes, a later one the latest.
func checkoutExpiry(at, now time.Time) time.Time {
	if earliest := now.Add(minCheckoutExpiry); at.Before(earliest) {
		return earliest
	}
	if latest := now.Add(maxCheckoutExpiry); at.After(latest) {
		return latest
	}
	return at
}

var currencyCode = regexp.MustCompile(`^[A-Za-z]{3}$`)

func (in CheckoutInput) validate() error {
	switch {
	case in.OrderNumber == "":
		return errors.New("no order number")
	case in.Amount <= 0:
		return fmt.Errorf("amount %d is not positive", in.Amount)
	case !currencyCode.MatchString(in.Currency):
		return fmt.Errorf("currency %q is not a three-letter ISO 4217 code", in.Currency)
	case in.ProductName == "":
		return errors.New("no product name")
	case in.SuccessURL == "":
		return errors.New("no success URL")
	case len(MethodsFor(in.Methods, in.Currency)) == 0:
		return fmt.Errorf("none of the payment methods %v takes %s", in.Methods, strings.ToUpper(in.Currency))
	}
	return nil
}

// CreateCheckout creates a Checkout Session in payment mode for one line
// item of in.Amount, tagged with the order number (as client_reference_id
// and in the metadata of the session and of its PaymentIntent). A zero
// in.ExpiresAt leaves Stripe's default; any other is moved into the window
// Stripe accepts (checkoutExpiry).
//
// stripe-mock checks the parameters' names, types and allowed values, but
// not amounts, currency codes or required fields: validate catches those
// before a request is sent.
func (c *Client) CreateCheckout(ctx context.Context, in CheckoutInput) (Checkout, error) {
	if err := in.validate(); err != nil {
		return Checkout{}, fmt.Errorf("stripe checkout for order %q: %w", in.OrderNumber, err)
	}
	currency := strings.ToLower(in.Currency)
	methods := MethodsFor(in.Methods, currency)
	params := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModePayment)),
		ClientReferenceID: stripe.String(in.OrderNumber),
		Metadata:          map[string]string{metadataOrderNumber: in.OrderNumber},
		PaymentIntentData: &stripe.CheckoutSessionCreatePaymentIntentDataParams{
			Metadata: map[string]string{metadataOrderNumber: in.OrderNumber},
		},
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:   stripe.String(currency),
				UnitAmount: stripe.Int64(in.Amount),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{
					Name: stripe.String(in.ProductName),
				},
			},
		}},
		PaymentMethodTypes: stripe.StringSlice(methods),
		SuccessURL:         stripe.String(in.SuccessURL),
	}
	if slices.Contains(methods, MethodWeChatPay) {
		// Stripe requires the client for WeChat Pay; "web" shows a QR code
		// on the Checkout page.
		params.PaymentMethodOptions = &stripe.CheckoutSessionCreatePaymentMethodOptionsParams{
			WeChatPay: &stripe.CheckoutSessionCreatePaymentMethodOptionsWeChatPayParams{
				Client: stripe.String("web"),
			},
		}
	}
	if in.CancelURL != "" {
		params.CancelURL = stripe.String(in.CancelURL)
	}
	if in.CustomerEmail != "" {
		params.CustomerEmail = stripe.String(in.CustomerEmail)
	}
	if !in.ExpiresAt.IsZero() {
		params.ExpiresAt = stripe.Int64(checkoutExpiry(in.ExpiresAt, time.Now()).Unix())
	}
	s, err := c.sc.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		return Checkout{}, fmt.Errorf("stripe checkout for order %q: %w", in.OrderNumber, err)
	}
	return Checkout{ID: s.ID, URL: s.URL, Status: string(s.Status)}, nil
}

// CheckoutSession is the Checkout Session id as Stripe has it now.
func (c *Client) CheckoutSession(ctx context.Context, id string) (Checkout, error) {
	s, err := c.sc.V1CheckoutSessions.Retrieve(ctx, id, nil)
	if err != nil {
		return Checkout{}, fmt.Errorf("stripe checkout session %s: %w", id, err)
	}
	return Checkout{ID: s.ID, URL: s.URL, Status: string(s.Status)}, nil
}

// Refund refunds amount (minor units, positive) of a PaymentIntent's
// payment and returns the refund's ID.
func (c *Client) Refund(ctx context.Context, paymentIntentID string, amount int64) (string, error) {
	if paymentIntentID == "" {
		return "", errors.New("stripe refund: no payment intent")
	}
	if amount <= 0 {
		return "", fmt.Errorf("stripe refund of %s: amount %d is not positive", paymentIntentID, amount)
	}
	r, err := c.sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{
		PaymentIntent: stripe.String(paymentIntentID),
		Amount:        stripe.Int64(amount),
	})
	if err != nil {
		return "", fmt.Errorf("stripe refund of %d from %s: %w", amount, paymentIntentID, err)
	}
	return r.ID, nil
}

// The webhook event types ParseEvent reads the object of.
const (
	EventCheckoutCompleted             = "checkout.session.completed"
	EventCheckoutAsyncPaymentSucceeded = "checkout.session.async_payment_succeeded"
	EventCheckoutAsyncPaymentFailed    = "checkout.session.async_payment_failed"
	EventCheckoutExpired               = "checkout.session.expired"
	EventChargeRefunded                = "charge.refunded"
)

// Event is a webhook event, with what we use of its object. Only ID, Type
// and Created are set for a type ParseEvent does not read.
type Event struct {
	ID      string
	Type    string
	Created time.Time

	SessionID       string // checkout.session.*
	PaymentIntentID string // checkout.session.* once paid, charge.refunded
	OrderNumber     string // from metadata; else a session's client_reference_id
	PaymentStatus   string // checkout.session.*: "paid", "unpaid", "no_payment_required"
	// Amount is a session's amount_total, or a charge's amount, in minor
	// units of Currency (lower case, as Stripe writes it).
	Amount         int64
	Currency       string
	AmountRefunded int64 // charge.refunded: the total refunded so far, minor units
}

// ErrSignature is wrapped by ParseEvent's error when the payload's
// Stripe-Signature header is missing, malformed or does not match, when
// it was signed longer ago than Tolerance, or when the signature or the
// event claims a time more than MaxClockSkew ahead: the request did not
// come from Stripe, or is a replay.
var ErrSignature = errors.New("stripe webhook signature not valid")

// ErrFuture is wrapped, with ErrSignature, by ParseEvent's error for a
// signature or an event dated more than MaxClockSkew after now. Stripe
// dates both when it sends, so only a forgery (or a clock gone wrong)
// comes from the future; a signature dated ahead would also outlast the
// Tolerance that bounds replays.
var ErrFuture = errors.New("stripe webhook dated in the future")

const (
	// Tolerance is how long after its signing a delivery is accepted.
	Tolerance = webhook.DefaultTolerance
	// MaxClockSkew is how far ahead of our clock Stripe's may run.
	MaxClockSkew = 5 * time.Minute
)

// ParseEvent verifies a webhook payload's Stripe-Signature header with the
// endpoint's signing secret, checks the signature's and the event's time
// against now, and reads the event. Events of an API version other than
// stripe-go's are accepted: the account's version decides the shape, and
// the few fields read here are the same in all recent ones.
func ParseEvent(payload []byte, sigHeader, secret string, now time.Time) (Event, error) {
	// The times are checked below, on the caller's clock.
	e, err := webhook.ConstructEventWithOptions(payload, sigHeader, secret, webhook.ConstructEventOptions{
		IgnoreAPIVersionMismatch: true, IgnoreTolerance: true,
	})
	if err != nil {
		if errors.Is(err, webhook.ErrNotSigned) || errors.Is(err, webhook.ErrInvalidHeader) ||
			errors.Is(err, webhook.ErrNoValidSignature) {
			return Event{}, fmt.Errorf("%w: %w", ErrSignature, err)
		}
		return Event{}, fmt.Errorf("stripe webhook: %w", err)
	}
	signed := signedAt(sigHeader)
	created := time.Unix(e.Created, 0).UTC()
	switch {
	case now.Sub(signed) > Tolerance:
		return Event{}, fmt.Errorf("%w: event %s signed at %s: %w", ErrSignature, e.ID, signed.UTC().Format(time.RFC3339), webhook.ErrTooOld)
	case signed.Sub(now) > MaxClockSkew:
		return Event{}, fmt.Errorf("%w: event %s signed at %s: %w", ErrSignature, e.ID, signed.UTC().Format(time.RFC3339), ErrFuture)
	case created.Sub(now) > MaxClockSkew:
		return Event{}, fmt.Errorf("%w: event %s created at %s: %w", ErrSignature, e.ID, created.Format(time.RFC3339), ErrFuture)
	}
	ev := Event{ID: e.ID, Type: string(e.Type), Created: created}
	switch ev.Type {
	case EventCheckoutCompleted, EventCheckoutAsyncPaymentSucceeded, EventCheckoutAsyncPaymentFailed, EventCheckoutExpired:
		var s stripe.CheckoutSession
		if err := eventObject(e, &s); err != nil {
			return Event{}, err
		}
		ev.SessionID = s.ID
		if s.PaymentIntent != nil {
			ev.PaymentIntentID = s.PaymentIntent.ID
		}
		ev.OrderNumber = s.Metadata[metadataOrderNumber]
		if ev.OrderNumber == "" {
			ev.OrderNumber = s.ClientReferenceID
		}
		ev.PaymentStatus = string(s.PaymentStatus)
		ev.Amount, ev.Currency = s.AmountTotal, string(s.Currency)
	case EventChargeRefunded:
		var ch stripe.Charge
		if err := eventObject(e, &ch); err != nil {
			return Event{}, err
		}
		if ch.PaymentIntent != nil {
			ev.PaymentIntentID = ch.PaymentIntent.ID
		}
		ev.OrderNumber = ch.Metadata[metadataOrderNumber]
		ev.Amount, ev.Currency = ch.Amount, string(ch.Currency)
		ev.AmountRefunded = ch.AmountRefunded
	}
	return ev, nil
}

// signedAt is the time of a Stripe-Signature header that verified
// ("t=1495999758,v1=..."): its last t, as stripe-go reads it.
func signedAt(header string) time.Time {
	var at time.Time
	for pair := range strings.SplitSeq(header, ",") {
		if v, ok := strings.CutPrefix(pair, "t="); ok {
			if sec, err := strconv.ParseInt(v, 10, 64); err == nil {
				at = time.Unix(sec, 0)
			}
		}
	}
	return at
}

func eventObject(e stripe.Event, v any) error {
	if e.Data == nil || len(e.Data.Raw) == 0 {
		return fmt.Errorf("stripe webhook: event %s (%s) has no object", e.ID, e.Type)
	}
	if err := json.Unmarshal(e.Data.Raw, v); err != nil {
		return fmt.Errorf("stripe webhook: event %s (%s): %w", e.ID, e.Type, err)
	}
	return nil
}
