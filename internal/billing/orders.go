package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// Order statuses.
const (
	OrderPending   = "pending"
	OrderPaid      = "paid"
	OrderCancelled = "cancelled"
	OrderExpired   = "expired"
	OrderRefunded  = "refunded"
)

// Order kinds.
const (
	KindNew     = "new"
	KindRenewal = "renewal"
)

// Errors users see (catalog message IDs).
var (
	ErrOrderNotFound = errors.New("ErrOrderNotFound")
	// ErrMethod: a payment method the admin has not switched on.
	ErrMethod = errors.New("ErrBillingMethodOff")
	// ErrPlanUnavailable: an archived or hidden plan, for a user.
	ErrPlanUnavailable = errors.New("ErrBillingPlanUnavailable")
	// ErrCurrencyChange: a paid period in one currency cannot move to a
	// plan priced in another before it ends.
	ErrCurrencyChange = errors.New("ErrBillingCurrencyChange")
	// ErrSamePlan: the plan and period the user has, with nothing to pay.
	ErrSamePlan = errors.New("ErrBillingSamePlan")
	// ErrOrderClosed: the order was cancelled, expired or refunded.
	ErrOrderClosed = errors.New("ErrBillingOrderClosed")
	// ErrAlreadyPaid: the order was paid already (its period applied once).
	ErrAlreadyPaid = errors.New("ErrBillingOrderPaid")
	// ErrNotManual: an admin marks only manual orders paid.
	ErrNotManual = errors.New("ErrBillingNotManual")
	// ErrReferenceRequired: marking paid takes the payment's reference.
	ErrReferenceRequired = errors.New("ErrBillingReferenceRequired")
	// ErrReferenceTooLong: a reference is up to 200 characters of text.
	ErrReferenceTooLong = errors.New("ErrBillingReferenceTooLong")
	// ErrPeriodNotOffered: the plan has no price for that period.
	ErrPeriodNotOffered = errors.New("ErrBillingPeriodNotOffered")
)

// Choice is what an owner's pick of a plan and period did: an order to
// pay, or (a downgrade while a paid period runs, or a free plan) a change
// at the period's end or at once.
type Choice struct {
	Order queries.Order
	// Scheduled: the plan follows at the end of the current period.
	Scheduled bool
	// Switched: the user moved to a free plan at once.
	Switched bool
}

// rate is a plan's price per month in minor units, for telling an upgrade
// from a downgrade: the monthly price, else a twelfth of the yearly one.
func rate(p queries.Plan) int64 {
	if m, ok := Price(p, Monthly); ok {
		return m.Minor
	}
	y, _ := Price(p, Yearly)
	return y.Minor / 12
}

// Tax on an amount at a rate in basis points, rounded half up.
func Tax(amount int64, basisPoints int) int64 {
	if amount <= 0 || basisPoints <= 0 {
		return 0
	}
	return (amount*int64(basisPoints) + 5000) / 10000
}

// Choose is an owner's pick of a plan and period for their organization
// (who, orgs.Billing), paid with method:
//   - the plan and period they have, in a paid period or past due: a
//     renewal order that adds the next period after the current one;
//   - with no paid period running: an order that starts one when paid;
//   - a plan worth more per month while a period runs (an upgrade): an
//     order that starts a new period at once when paid, credited with the
//     unused part of the current one, pro rata;
//   - a plan worth less per month, or another period of the same plan,
//     while a period runs: scheduled for the period's end, no order;
//   - a free plan with no period running: switched at once.
//
// A period the plan has no price for is refused: a paid plan is never had
// for nothing. A pending order of the organization is cancelled: the new
// one replaces it. Credit (what was paid for the unused part of the
// current period) that covers the whole price pays the order at once.
// The order is the organization's, placed by who.UserID.
func (s *Service) Choose(ctx context.Context, who orgs.Acting, planID int64, period Period, method string, actor audit.Actor) (Choice, error) {
	if _, err := ParsePeriod(string(period)); err != nil {
		return Choice{}, err
	}
	var out Choice
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		st, err := LoadSettings(ctx, q, s.Box)
		if err != nil {
			return err
		}
		sub, err := lockFor(ctx, q, who)
		if err != nil {
			return err
		}
		orgID := sub.OrgID
		plan, err := q.PlanGet(ctx, planID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrPlanNotFound
		}
		if err != nil {
			return fmt.Errorf("load plan %d: %w", planID, err)
		}
		current, err := q.PlanGet(ctx, sub.PlanID)
		if err != nil {
			return fmt.Errorf("load plan %d: %w", sub.PlanID, err)
		}
		// Archived and hidden plans are for their subscribers alone (who
		// renew them).
		if (plan.ArchivedAt.Valid || !plan.Public) && plan.ID != sub.PlanID {
			return ErrPlanUnavailable
		}
		now := s.now()
		running := sub.CurrentPeriodEnd.Valid
		samePlan := plan.ID == sub.PlanID && sub.Period.String == string(period)
		if plan.Free {
			if !running {
				if plan.ID == sub.PlanID {
					return ErrSamePlan
				}
				if _, err := q.SubscriptionSetPlan(ctx, queries.SubscriptionSetPlanParams{OrgID: orgID, PlanID: plan.ID, Status: "active"}); err != nil {
					return fmt.Errorf("switch plan: %w", err)
				}
				out.Switched = true
				return s.audit(ctx, q, actor, orgID, "billing.plan_switch", map[string]any{"plan": plan.Name})
			}
			return s.schedule(ctx, q, actor, orgID, plan, period, &out)
		}
		m, offered := Price(plan, period)
		if !offered {
			return ErrPeriodNotOffered
		}
		price := m.Minor
		kind, credit := KindNew, int64(0)
		switch {
		case running && samePlan:
			kind = KindRenewal
		case running && sub.Status == "active":
			if plan.Currency != sub.PeriodCurrency && sub.PeriodAmount > 0 {
				return ErrCurrencyChange
			}
			if rate(plan) <= rate(current) {
				return s.schedule(ctx, q, actor, orgID, plan, period, &out)
			}
			credit = min(Unused(sub.PeriodAmount, sub.CurrentPeriodStart.Time, sub.CurrentPeriodEnd.Time, now), price)
		}
		if !st.Accepts(method) {
			return ErrMethod
		}
		if pending, err := q.OrderPendingForOrg(ctx, orgID); err == nil {
			if err := s.close(ctx, q, pending, OrderCancelled, actor, "replaced"); err != nil {
				return err
			}
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("load pending order: %w", err)
		}
		taxLabel := ""
		tax := Tax(price-credit, st.TaxRateBasisPoints)
		if st.TaxRateBasisPoints > 0 {
			taxLabel = st.TaxLabel
		}
		o, err := q.OrderCreate(ctx, queries.OrderCreateParams{
			OrgID: orgID, UserID: who.UserID, PlanID: plan.ID, Period: string(period), Kind: kind, Currency: plan.Currency,
			Amount: price, Credit: credit, Tax: tax, TaxLabel: taxLabel, Total: price - credit + tax, Method: method,
			ExpiresAt: pgtype.Timestamptz{Time: now.Add(st.OrderExpiry()), Valid: true},
		})
		if err != nil {
			return fmt.Errorf("create order: %w", err)
		}
		if err := s.event(ctx, q, o.ID, "created", actor.UserID, map[string]any{"plan": plan.Name, "period": period, "kind": kind, "credit": credit}); err != nil {
			return err
		}
		if err := s.audit(ctx, q, actor, orgID, "billing.order_create", map[string]any{"order": o.Number, "plan": plan.Name, "total": o.Total, "currency": o.Currency}); err != nil {
			return err
		}
		if o.Total == 0 && o.Credit == o.Amount {
			// The credit pays it all.
			o, err = s.pay(ctx, tx, o, "credit", actor, "")
			if err != nil {
				return err
			}
		}
		out.Order = o
		return nil
	})
	return out, err
}

// schedule sets plan to follow at the end of the organization's running
// period.
func (s *Service) schedule(ctx context.Context, q *queries.Queries, actor audit.Actor, orgID int64, plan queries.Plan, period Period, out *Choice) error {
	if _, err := q.SubscriptionSchedule(ctx, queries.SubscriptionScheduleParams{
		OrgID: orgID, PlanID: pgtype.Int8{Int64: plan.ID, Valid: true}, Period: pgtype.Text{String: string(period), Valid: true},
	}); err != nil {
		return fmt.Errorf("schedule plan change: %w", err)
	}
	out.Scheduled = true
	return s.audit(ctx, q, actor, orgID, "billing.plan_schedule", map[string]any{"plan": plan.Name, "period": period})
}

// maxReference bounds a payment's reference.
const maxReference = 200

// MarkPaid records an admin's receipt of a manual order's payment, with
// its reference (a bank transfer's, an invoice's): the order's period
// starts or extends the subscription of the order's organization.
func (s *Service) MarkPaid(ctx context.Context, orderID int64, reference string, actor audit.Actor) (queries.Order, error) {
	reference = strings.TrimSpace(reference)
	switch {
	case reference == "":
		return queries.Order{}, ErrReferenceRequired
	case utf8.RuneCountInString(reference) > maxReference || !input.Storable(reference):
		return queries.Order{}, ErrReferenceTooLong
	}
	var o queries.Order
	err := s.asAdminTx(ctx, actor, func(tx pgx.Tx) error {
		q := queries.New(tx)
		var err error
		o, err = q.OrderLock(ctx, orderID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrOrderNotFound
		}
		if err != nil {
			return fmt.Errorf("lock order %d: %w", orderID, err)
		}
		if o.Method != MethodManual {
			return ErrNotManual
		}
		o, err = s.pay(ctx, tx, o, reference, actor, "")
		return err
	})
	return o, err
}

// pay applies a payment of o (locked by the caller) exactly once: the
// order's 'paid' event is unique (a second is refused by the index, not
// by a check here), then the order is paid and the period of its
// organization's subscription starts or extends. An order paid already is
// ErrAlreadyPaid.
func (s *Service) pay(ctx context.Context, tx pgx.Tx, o queries.Order, reference string, actor audit.Actor, stripeEvent string) (queries.Order, error) {
	switch o.Status {
	case OrderPaid, OrderRefunded:
		return o, ErrAlreadyPaid
	case OrderCancelled:
		if stripeEvent == "" {
			return o, ErrOrderClosed
		}
	}
	err := s.payOnce(ctx, tx, func(q *queries.Queries) error {
		return s.event(ctx, q, o.ID, "paid", actor.UserID, map[string]any{"reference": reference}, stripeEvent)
	})
	if err != nil {
		return o, err
	}
	q := queries.New(tx)
	sub, err := q.SubscriptionLock(ctx, o.OrgID)
	if err != nil {
		return o, fmt.Errorf("lock subscription of organization %d: %w", o.OrgID, err)
	}
	now := s.now()
	period := Period(o.Period)
	anchor, start := now, now
	if o.Kind == KindRenewal && sub.PlanID == o.PlanID && sub.Period.String == o.Period &&
		sub.CurrentPeriodEnd.Valid && sub.PeriodAnchor.Valid {
		// The next period after the current one, on the same anchor.
		anchor, start = sub.PeriodAnchor.Time, sub.CurrentPeriodEnd.Time
	}
	_, end := period.Current(anchor, start)
	if !end.After(now) {
		// Paid so late that the next period is over too: start afresh.
		anchor, start, end = now, now, period.Boundary(now, 1)
	}
	o, err = q.OrderMarkPaid(ctx, queries.OrderMarkPaidParams{
		ID: o.ID, PaidAt: ts(now), Reference: reference, PeriodStart: ts(start), PeriodEnd: ts(end),
	})
	if err != nil {
		return o, fmt.Errorf("mark order paid: %w", err)
	}
	if _, err := q.SubscriptionStartPeriod(ctx, queries.SubscriptionStartPeriodParams{
		OrgID: o.OrgID, PlanID: o.PlanID, Period: pgtype.Text{String: o.Period, Valid: true},
		PeriodAnchor: ts(anchor), PeriodStart: pgtype.Timestamptz{Time: start, Valid: true}, PeriodEnd: ts(end),
		PeriodAmount: o.Amount, PeriodCurrency: o.Currency,
	}); err != nil {
		return o, fmt.Errorf("start period: %w", err)
	}
	if err := s.audit(ctx, q, actor, o.OrgID, "billing.order_paid", map[string]any{"order": o.Number, "reference": reference, "until": end}); err != nil {
		return o, err
	}
	plan, err := q.PlanGet(ctx, o.PlanID)
	if err != nil {
		return o, fmt.Errorf("load plan %d: %w", o.PlanID, err)
	}
	return o, s.tellPlacer(ctx, tx, o, EmailOrderPaid, map[string]any{
		"Order": o.Number, "Plan": plan.Name, "Amount": Money{Minor: o.Total, Currency: o.Currency}.String(), "Until": end.UTC().Format(time.DateOnly),
	})
}

// payOnce runs the insert of an order's 'paid' event in a savepoint: its
// unique index refusing a second one is ErrAlreadyPaid, and the caller's
// transaction goes on.
func (s *Service) payOnce(ctx context.Context, tx pgx.Tx, fn func(*queries.Queries) error) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if err := fn(queries.New(sp)); err != nil {
		_ = sp.Rollback(ctx)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return ErrAlreadyPaid
		}
		return err
	}
	return sp.Commit(ctx)
}

// CancelOrder cancels a pending order of who's organization, for an
// owner.
func (s *Service) CancelOrder(ctx context.Context, who orgs.Acting, orderID int64, actor audit.Actor) (queries.Order, error) {
	var o queries.Order
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		var err error
		o, err = q.OrderLockForMember(ctx, queries.OrderLockForMemberParams{
			ID: orderID, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Billing),
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return orderRefusal(ctx, q, who, orderID)
		}
		if err != nil {
			return fmt.Errorf("lock order %d: %w", orderID, err)
		}
		return s.cancelPending(ctx, q, &o, actor)
	})
	return o, err
}

// AdminCancelOrder cancels any pending order, for an active admin.
func (s *Service) AdminCancelOrder(ctx context.Context, orderID int64, actor audit.Actor) (queries.Order, error) {
	var o queries.Order
	err := s.asAdminTx(ctx, actor, func(tx pgx.Tx) error {
		q := queries.New(tx)
		var err error
		o, err = q.OrderLock(ctx, orderID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrOrderNotFound
		}
		if err != nil {
			return fmt.Errorf("lock order %d: %w", orderID, err)
		}
		return s.cancelPending(ctx, q, &o, actor)
	})
	return o, err
}

// cancelPending cancels o (locked), if it is pending.
func (s *Service) cancelPending(ctx context.Context, q *queries.Queries, o *queries.Order, actor audit.Actor) error {
	switch o.Status {
	case OrderPaid, OrderRefunded:
		return ErrAlreadyPaid
	case OrderPending:
	default:
		return ErrOrderClosed
	}
	if err := s.close(ctx, q, *o, OrderCancelled, actor, "cancelled"); err != nil {
		return err
	}
	o.Status = OrderCancelled
	return nil
}

// close ends a pending order as cancelled or expired, with its event.
func (s *Service) close(ctx context.Context, q *queries.Queries, o queries.Order, status string, actor audit.Actor, why string) error {
	if _, err := q.OrderClose(ctx, queries.OrderCloseParams{ID: o.ID, Status: status}); err != nil {
		return fmt.Errorf("close order %s: %w", o.Number, err)
	}
	if err := s.event(ctx, q, o.ID, status, actor.UserID, map[string]any{"why": why}); err != nil {
		return err
	}
	if actor.UserID == 0 {
		return nil
	}
	return s.audit(ctx, q, actor, o.OrgID, "billing.order_"+status, map[string]any{"order": o.Number, "why": why})
}

// MaxBatch bounds the rows a periodic billing job handles in one
// transaction.
const MaxBatch = 500

// ExpireOrders expires the pending orders past their deadline, a bounded
// batch; it reports how many.
func (s *Service) ExpireOrders(ctx context.Context) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		rows, err := q.OrdersExpire(ctx, queries.OrdersExpireParams{Now: ts(s.now()), MaxRows: MaxBatch})
		if err != nil {
			return fmt.Errorf("expire orders: %w", err)
		}
		for _, o := range rows {
			if err := s.event(ctx, q, o.ID, OrderExpired, 0, map[string]any{}); err != nil {
				return err
			}
		}
		n = len(rows)
		return nil
	})
	return n, err
}

// event adds to an order's history; stripeEvent, when given, is recorded
// once (a unique column).
func (s *Service) event(ctx context.Context, q *queries.Queries, orderID int64, kind string, actorID int64, detail map[string]any, stripeEvent ...string) error {
	b, err := json.Marshal(detail)
	if err != nil {
		return fmt.Errorf("encode order event: %w", err)
	}
	p := queries.OrderEventAddParams{OrderID: orderID, Kind: kind, Detail: b}
	if actorID != 0 {
		p.ActorID = pgtype.Int8{Int64: actorID, Valid: true}
	}
	if len(stripeEvent) > 0 && stripeEvent[0] != "" {
		p.StripeEventID = pgtype.Text{String: stripeEvent[0], Valid: true}
	}
	if _, err := q.OrderEventAdd(ctx, p); err != nil {
		return fmt.Errorf("record order event %s: %w", kind, err)
	}
	return nil
}

// audit records a billing action about an organization; actor is who
// acted (none for the platform's jobs).
func (s *Service) audit(ctx context.Context, q *queries.Queries, actor audit.Actor, orgID int64, action string, details map[string]any) error {
	return audit.Record(ctx, q, actor, audit.Event{Action: action, TargetType: "organization", TargetID: fmt.Sprint(orgID), Details: details})
}

// tell tells the owners of an organization, every one of them, about its
// subscription (a period ending, past due, ended, changed; over its
// limits), each as their preferences say: the owners are who may act on
// it. What is about one order goes to who placed it instead
// (tellPlacer).
func (s *Service) tell(ctx context.Context, tx pgx.Tx, orgID int64, template string, data map[string]any) error {
	q := queries.New(tx)
	owners, err := q.OrgOwnerUsers(ctx, orgID)
	if err != nil {
		return fmt.Errorf("load the owners of organization %d: %w", orgID, err)
	}
	if err := notify.NameOrg(ctx, q, orgID, data); err != nil {
		return err
	}
	for _, u := range owners {
		if err := s.tellUser(ctx, tx, u, template, data); err != nil {
			return err
		}
	}
	return nil
}

// tellPlacer tells who placed order o about it (paid, its payment failed,
// refunded): they are waiting for its word, and have its number. For a
// personal organization that is its owner, as before organizations.
func (s *Service) tellPlacer(ctx context.Context, tx pgx.Tx, o queries.Order, template string, data map[string]any) error {
	q := queries.New(tx)
	u, err := q.UserGetByID(ctx, o.UserID)
	if err != nil {
		return fmt.Errorf("load user %d: %w", o.UserID, err)
	}
	if err := notify.NameOrg(ctx, q, o.OrgID, data); err != nil {
		return err
	}
	return s.tellUser(ctx, tx, u, template, data)
}

func (s *Service) tellUser(ctx context.Context, tx pgx.Tx, u queries.User, template string, data map[string]any) error {
	if _, err := (notify.Notices{Box: s.Box, River: s.River}).Tell(ctx, tx, u, notify.Billing, template, data); err != nil {
		return fmt.Errorf("billing notice to user %d: %w", u.ID, err)
	}
	return nil
}

// asAdminTx runs fn in a transaction that holds the acting admin's row.
func (s *Service) asAdminTx(ctx context.Context, actor audit.Actor, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		if err := adminauth.LockActiveAdmin(ctx, queries.New(tx), actor.UserID); err != nil {
			return err
		}
		return fn(tx)
	})
}

func ts(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t, Valid: true} }

func pgText(s string) pgtype.Text { return pgtype.Text{String: s, Valid: s != ""} }

// Email templates of billing notices (catalog Mail<T>Subject, Mail<T>Body,
// Notify<T>Body).
const (
	EmailOrderPaid      = "OrderPaid"
	EmailPeriodEnding   = "PeriodEnding"
	EmailPeriodPastDue  = "PeriodPastDue"
	EmailPlanExpired    = "PlanExpired"
	EmailPlanCancelled  = "PlanCancelled"
	EmailPlanChanged    = "PlanChanged"
	EmailOverLimit      = "OverLimit"
	EmailPaymentFailed  = "PaymentFailed"
	EmailOrderRefunded  = "OrderRefunded"
	EmailPlanByAdmin    = "PlanByAdmin"
	EmailPeriodExtended = "PeriodExtended"
)
