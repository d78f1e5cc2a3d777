package billing

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/stripepay"
	"github.com/kubebyon/kubebyon/queries"
)

// Errors users see (catalog message IDs).
var (
	// ErrStripe: Stripe refused or could not be reached; the order stays
	// pending and Pay now tries again.
	ErrStripe = errors.New("ErrBillingStripe")
	// ErrRefundAmount: a refund is more than zero and at most what was
	// paid and not refunded yet.
	ErrRefundAmount = errors.New("ErrBillingRefundAmount")
	// ErrNotPaid: only a paid order is refunded.
	ErrNotPaid = errors.New("ErrBillingNotPaid")
)

// ErrEventRefused is wrapped by StripeEvent's error for a verified event
// that does not fit the order it names: not from the Checkout Session
// opened for it, another amount or currency, an order not paid by Stripe.
// Nothing changed; Stripe sending it again would change nothing either,
// so the delivery is acknowledged and the reason logged.
var ErrEventRefused = errors.New("stripe event refused")

// stripe is the Stripe client for the settings' key: StripeURL (tests:
// stripe-mock), else Stripe's API.
func (s *Service) stripe(st Settings) *stripepay.Client {
	return stripepay.New(st.StripeSecretKey, s.StripeURL)
}

// Checkout opens a Stripe Checkout Session for a pending Stripe order of
// who's organization, for an owner (orgs.Billing), and returns its URL;
// the session is kept on the order (its client_reference_id is the
// order's number), and only its webhook events pay it. email prefills
// Stripe's form: the address of who pays. An order has one session at a time: while
// the one kept is open, the buyer goes back to it; once it is complete
// (paid, or a payment under way), to the order page to wait for Stripe's
// word; only once it has expired is another opened. returnURL is the
// order's page: Stripe sends the buyer back there, paid or not.
func (s *Service) Checkout(ctx context.Context, who orgs.Acting, orderID int64, email, returnURL string) (string, error) {
	q := queries.New(s.Pool)
	row, err := q.OrderGetForMember(ctx, queries.OrderGetForMemberParams{ID: orderID, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Billing)})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", orderRefusal(ctx, q, who, orderID)
	}
	if err != nil {
		return "", fmt.Errorf("load order %d: %w", orderID, err)
	}
	o := row.Order
	if o.Status != OrderPending {
		return "", ErrOrderClosed
	}
	if o.Method != MethodStripe {
		return "", ErrMethod
	}
	st, err := LoadSettings(ctx, q, s.Box)
	if err != nil {
		return "", err
	}
	if !st.Accepts(MethodStripe) {
		return "", ErrMethod
	}
	client := s.stripe(st)
	returned := returnURL + "?checkout=done"
	if o.StripeSessionID.Valid {
		kept, err := client.CheckoutSession(ctx, o.StripeSessionID.String)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrStripe, err)
		}
		switch kept.Status {
		case stripepay.CheckoutOpen:
			return kept.URL, nil
		case stripepay.CheckoutComplete:
			return returned, nil
		}
	}
	plan, err := q.PlanGet(ctx, o.PlanID)
	if err != nil {
		return "", fmt.Errorf("load plan %d: %w", o.PlanID, err)
	}
	co, err := client.CreateCheckout(ctx, stripepay.CheckoutInput{
		OrderNumber: o.Number, Amount: o.Total, Currency: o.Currency,
		ProductName:   fmt.Sprintf("%s (%s)", plan.Name, o.Period),
		CustomerEmail: email, SuccessURL: returned, CancelURL: returnURL, ExpiresAt: o.ExpiresAt.Time,
		Methods: st.StripeMethodsOffered(),
	})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrStripe, err)
	}
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		_, err := q.OrderSetStripeSession(ctx, queries.OrderSetStripeSessionParams{
			ID: o.ID, StripeSessionID: pgText(co.ID), Previous: o.StripeSessionID,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			// Another Pay now kept its session first, or the order closed:
			// this session stays unknown to the order, and its URL unsent.
			return fmt.Errorf("%w: order %s changed while checkout session %s opened", ErrStripe, o.Number, co.ID)
		}
		if err != nil {
			return fmt.Errorf("keep checkout session: %w", err)
		}
		return s.event(ctx, q, o.ID, "checkout", who.UserID, map[string]any{"session": co.ID})
	})
	if err != nil {
		return "", err
	}
	return co.URL, nil
}

// StripeEvent verifies a webhook delivery's signature with the settings'
// secret and applies it: ErrSignature (wrapped) when it does not verify,
// or it is dated too long ago or ahead of our clock, and nothing changes.
// An event that does not fit its order is ErrEventRefused (wrapped), and
// nothing changes either (eventOrder). Each event is applied once (its
// id is unique among the orders' events); a redelivery, or an event that
// arrives after a later one (an expiry after the payment), changes
// nothing.
func (s *Service) StripeEvent(ctx context.Context, payload []byte, signature string) error {
	st, err := LoadSettings(ctx, queries.New(s.Pool), s.Box)
	if err != nil {
		return err
	}
	if st.StripeWebhookSecret == "" {
		return fmt.Errorf("%w: no webhook secret set", stripepay.ErrSignature)
	}
	ev, err := stripepay.ParseEvent(payload, signature, st.StripeWebhookSecret, s.now())
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		o, found, err := s.eventOrder(ctx, q, ev)
		if err != nil || !found {
			return err
		}
		detail := map[string]any{"type": ev.Type, "session": ev.SessionID, "paymentIntent": ev.PaymentIntentID}
		paid := ev.Type == stripepay.EventCheckoutAsyncPaymentSucceeded ||
			(ev.Type == stripepay.EventCheckoutCompleted && ev.PaymentStatus == "paid")
		if paid {
			_, err := s.pay(ctx, tx, o, ev.PaymentIntentID, audit.Actor{}, ev.ID)
			if !errors.Is(err, ErrAlreadyPaid) {
				return err
			}
			// Paid by another event already: this one only recorded.
		}
		if err := s.payOnce(ctx, tx, func(q *queries.Queries) error {
			return s.event(ctx, q, o.ID, "stripe", 0, detail, ev.ID)
		}); errors.Is(err, ErrAlreadyPaid) {
			return nil // a redelivery
		} else if err != nil {
			return err
		}
		switch ev.Type {
		case stripepay.EventCheckoutExpired:
			if o.Status == OrderPending {
				return s.close(ctx, q, o, OrderExpired, audit.Actor{}, "checkout expired")
			}
		case stripepay.EventCheckoutAsyncPaymentFailed:
			if o.Status == OrderPending {
				// The session is spent: Pay now opens another.
				if _, err := q.OrderSetStripeSession(ctx, queries.OrderSetStripeSessionParams{ID: o.ID, Previous: o.StripeSessionID}); err != nil {
					return fmt.Errorf("forget failed checkout session: %w", err)
				}
			}
			return s.tellPlacer(ctx, tx, o, EmailPaymentFailed, map[string]any{"Order": o.Number})
		case stripepay.EventChargeRefunded:
			if o.Status == OrderPaid || o.Status == OrderRefunded {
				return s.refunded(ctx, tx, o, ev.AmountRefunded, audit.Actor{}, "stripe")
			}
		}
		return nil
	})
}

// eventOrder is the order an event is about, locked, once the event is
// found to fit it. A Checkout Session's event finds only the order the
// session was opened for (its order number in the metadata or
// client_reference_id is anyone's to write, on a payment link of the same
// Stripe account); a charge's, only the Stripe order its PaymentIntent
// paid. The order must be a Stripe one, and the session's or charge's
// amount and currency the order's total and currency: ErrEventRefused
// otherwise. An event about no order of ours that names none is
// acknowledged and ignored (found false); one that names an order is
// refused, to be logged.
func (s *Service) eventOrder(ctx context.Context, q *queries.Queries, ev stripepay.Event) (queries.Order, bool, error) {
	var (
		o   queries.Order
		err = pgx.ErrNoRows
	)
	switch {
	case ev.SessionID != "":
		o, err = q.OrderByStripeSession(ctx, pgText(ev.SessionID))
	case ev.Type == stripepay.EventChargeRefunded && ev.PaymentIntentID != "":
		o, err = q.OrderByReference(ctx, ev.PaymentIntentID)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		if ev.OrderNumber != "" {
			return o, false, fmt.Errorf("%w: %s %s names order %q but is of no session or payment of ours (session %q, payment %q)",
				ErrEventRefused, ev.Type, ev.ID, ev.OrderNumber, ev.SessionID, ev.PaymentIntentID)
		}
		return o, false, nil
	}
	if err != nil {
		return o, false, fmt.Errorf("find the order of stripe event %s: %w", ev.ID, err)
	}
	o, err = q.OrderLock(ctx, o.ID)
	if err != nil {
		return o, false, fmt.Errorf("lock order %d: %w", o.ID, err)
	}
	switch {
	case o.Method != MethodStripe:
		err = fmt.Errorf("order %s is paid by %s", o.Number, o.Method)
	case ev.Amount != o.Total || !strings.EqualFold(ev.Currency, o.Currency):
		err = fmt.Errorf("%s %d for order %s of %s %d", ev.Currency, ev.Amount, o.Number, o.Currency, o.Total)
	case ev.AmountRefunded > o.Total:
		err = fmt.Errorf("%d refunded of order %s of %d", ev.AmountRefunded, o.Number, o.Total)
	default:
		return o, true, nil
	}
	return o, false, fmt.Errorf("%w: %s %s: %w", ErrEventRefused, ev.Type, ev.ID, err)
}

// Refund gives back amount of a paid order, by an admin for a reason:
// through Stripe for a Stripe order, recorded for a manual one. The
// period it paid for ends (all refunded) or is shortened in proportion.
func (s *Service) Refund(ctx context.Context, orderID, amount int64, reason string, actor audit.Actor) (queries.Order, error) {
	if reason == "" {
		return queries.Order{}, ErrReasonRequired
	}
	q := queries.New(s.Pool)
	o, err := q.OrderGet(ctx, orderID)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, ErrOrderNotFound
	}
	if err != nil {
		return o, fmt.Errorf("load order %d: %w", orderID, err)
	}
	if o.Status != OrderPaid {
		return o, ErrNotPaid
	}
	if amount <= 0 || amount > o.Total-o.RefundedAmount {
		return o, ErrRefundAmount
	}
	refundID := ""
	if o.Method == MethodStripe && o.Reference != "" && o.Reference != "credit" {
		st, err := LoadSettings(ctx, q, s.Box)
		if err != nil {
			return o, err
		}
		if refundID, err = s.stripe(st).Refund(ctx, o.Reference, amount); err != nil {
			return o, fmt.Errorf("%w: %w", ErrStripe, err)
		}
	}
	err = s.asAdminTx(ctx, actor, func(tx pgx.Tx) error {
		q := queries.New(tx)
		var err error
		if o, err = q.OrderLock(ctx, orderID); err != nil {
			return fmt.Errorf("lock order %d: %w", orderID, err)
		}
		if err := s.event(ctx, q, o.ID, "refund", actor.UserID, map[string]any{"amount": amount, "reason": reason, "refund": refundID}); err != nil {
			return err
		}
		return s.refunded(ctx, tx, o, min(o.Total, o.RefundedAmount+amount), actor, reason)
	})
	if err != nil {
		return o, err
	}
	return queries.New(s.Pool).OrderGet(ctx, orderID)
}

// refunded records that total of o (locked) is refunded so far: the
// order, and the subscription period it paid for when that is the
// current one: ended at once when all of it is refunded, else shortened
// to the part still paid for.
func (s *Service) refunded(ctx context.Context, tx pgx.Tx, o queries.Order, total int64, actor audit.Actor, reason string) error {
	if total <= o.RefundedAmount {
		return nil // told already (Stripe's event after our own refund)
	}
	q := queries.New(tx)
	updated, err := q.OrderRefund(ctx, queries.OrderRefundParams{ID: o.ID, RefundedAmount: total})
	if err != nil {
		return fmt.Errorf("record refund: %w", err)
	}
	if err := s.audit(ctx, q, actor, o.OrgID, "billing.order_refund", map[string]any{"order": o.Number, "refunded": total, "reason": reason}); err != nil {
		return err
	}
	sub, err := q.SubscriptionLock(ctx, o.OrgID)
	if err != nil {
		return fmt.Errorf("lock subscription: %w", err)
	}
	// The current period is the order's when it ends within what the
	// order paid for (an earlier partial refund may have shortened it).
	current := sub.PlanID == o.PlanID && sub.CurrentPeriodEnd.Valid && o.PeriodEnd.Valid &&
		sub.CurrentPeriodEnd.Time.After(o.PeriodStart.Time) && !sub.CurrentPeriodEnd.Time.After(o.PeriodEnd.Time)
	if current && o.Total > 0 {
		if total >= o.Total {
			if err := s.cancelNow(ctx, tx, sub); err != nil {
				return err
			}
		} else {
			start, end := o.PeriodStart.Time, o.PeriodEnd.Time
			kept := new(big.Int).Mul(big.NewInt(int64(end.Sub(start)/time.Second)), big.NewInt(o.Total-total))
			kept.Quo(kept, big.NewInt(o.Total))
			newEnd := start.Add(time.Duration(kept.Int64()) * time.Second)
			if _, err := q.SubscriptionSetPeriodEnd(ctx, queries.SubscriptionSetPeriodEndParams{OrgID: o.OrgID, PeriodEnd: ts(newEnd)}); err != nil {
				return fmt.Errorf("shorten period: %w", err)
			}
		}
	}
	return s.tellPlacer(ctx, tx, o, EmailOrderRefunded, map[string]any{
		"Order": updated.Number, "Amount": Money{Minor: total - o.RefundedAmount, Currency: o.Currency}.String(),
	})
}
