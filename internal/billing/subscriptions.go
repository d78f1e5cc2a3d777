package billing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/queries"
)

// Subscription statuses.
const (
	StatusActive    = "active"
	StatusPastDue   = "past_due"
	StatusCancelled = "cancelled"
	StatusExpired   = "expired"
)

// Errors users see (catalog message IDs).
var (
	// ErrNoPeriod: cancel, resume or extend need a paid period.
	ErrNoPeriod = errors.New("ErrBillingNoPeriod")
	// ErrReasonRequired: an admin's change to a subscription says why.
	ErrReasonRequired = errors.New("ErrBillingReasonRequired")
	// ErrExtendDays: an extension is 1 to 366 days.
	ErrExtendDays = errors.New("ErrBillingExtendDays")
)

// EndingNotice is how long before a period's end its owner is told.
const EndingNotice = 7 * 24 * time.Hour

// Subscription is a user's subscription with its plan and the plan that
// follows at the period's end, if any.
type Subscription struct {
	queries.Subscription
	Plan          queries.Plan
	ScheduledPlan string
}

// SubscriptionOf reads the user's subscription.
func (s *Service) SubscriptionOf(ctx context.Context, userID int64) (Subscription, error) {
	r, err := queries.New(s.Pool).SubscriptionWithPlan(ctx, userID)
	if err != nil {
		return Subscription{}, fmt.Errorf("subscription of user %d: %w", userID, err)
	}
	return Subscription{Subscription: r.Subscription, Plan: r.Plan, ScheduledPlan: r.ScheduledPlanName}, nil
}

// SetCancel cancels the user's paid plan at the period's end (cancel), or
// takes that back (resume). A scheduled plan change falls away either
// way.
func (s *Service) SetCancel(ctx context.Context, userID int64, cancel bool, actor audit.Actor) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		sub, err := q.SubscriptionLock(ctx, userID)
		if err != nil {
			return lockError(userID, err)
		}
		if !sub.CurrentPeriodEnd.Valid || sub.Status != StatusActive {
			return ErrNoPeriod
		}
		if _, err := q.SubscriptionSetCancel(ctx, queries.SubscriptionSetCancelParams{UserID: userID, Cancel: cancel}); err != nil {
			return fmt.Errorf("cancel subscription: %w", err)
		}
		action := "billing.resume"
		if cancel {
			action = "billing.cancel"
		}
		return s.audit(ctx, q, actor, userID, action, map[string]any{"periodEnd": sub.CurrentPeriodEnd.Time})
	})
}

// RunPeriods does what is due on subscriptions at now, a bounded batch
// (it reports how many rows it handled; a full batch means call again):
//   - an active period that ended: a cancel puts the user on the default
//     plan (cancelled); a scheduled change moves to its plan, at once for
//     a free one, else past due until its period is paid; otherwise past
//     due, the plan kept for the grace period;
//   - a past-due period whose grace ran out: the default plan (expired);
//   - a period ending within EndingNotice: its owner is told, once.
//
// Nothing is deleted: limits that fall below what the user has refuse
// new clusters and nodes, and the owner is told.
func (s *Service) RunPeriods(ctx context.Context) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		st, err := LoadSettings(ctx, q, s.Box)
		if err != nil {
			return err
		}
		now := s.now()
		due, err := q.SubscriptionsDue(ctx, queries.SubscriptionsDueParams{
			Now: ts(now), GraceBefore: ts(now.Add(-st.Grace())), NoticeBefore: ts(now.Add(EndingNotice)), MaxRows: MaxBatch,
		})
		if err != nil {
			return fmt.Errorf("subscriptions due: %w", err)
		}
		def, err := q.PlanDefault(ctx)
		if err != nil {
			return fmt.Errorf("default plan: %w", err)
		}
		for _, sub := range due {
			if err := s.runPeriod(ctx, tx, sub, def, st, now); err != nil {
				return fmt.Errorf("subscription of user %d: %w", sub.UserID, err)
			}
		}
		n = len(due)
		return nil
	})
	return n, err
}

func (s *Service) runPeriod(ctx context.Context, tx pgx.Tx, sub queries.Subscription, def queries.Plan, st Settings, now time.Time) error {
	q := queries.New(tx)
	system := audit.Actor{}
	end := sub.CurrentPeriodEnd.Time
	plan, err := q.PlanGet(ctx, sub.PlanID)
	if err != nil {
		return fmt.Errorf("load plan: %w", err)
	}
	switch {
	case sub.Status == StatusActive && !end.After(now) && sub.CancelAtPeriodEnd:
		return s.toDefault(ctx, tx, sub, def, StatusCancelled, EmailPlanCancelled, map[string]any{"Plan": plan.Name})
	case sub.Status == StatusActive && !end.After(now) && sub.ScheduledPlanID.Valid:
		next, err := q.PlanGet(ctx, sub.ScheduledPlanID.Int64)
		if err != nil {
			return fmt.Errorf("load scheduled plan: %w", err)
		}
		period := Period(sub.ScheduledPeriod.String)
		if period == "" {
			period = Period(sub.Period.String)
		}
		if next.Free {
			if _, err := q.SubscriptionSetPlan(ctx, queries.SubscriptionSetPlanParams{UserID: sub.UserID, PlanID: next.ID, Status: StatusActive}); err != nil {
				return fmt.Errorf("switch plan: %w", err)
			}
		} else if _, err := q.SubscriptionMoveToScheduled(ctx, queries.SubscriptionMoveToScheduledParams{
			UserID: sub.UserID, Period: pgtype.Text{String: string(period), Valid: true},
		}); err != nil {
			return fmt.Errorf("move to scheduled plan: %w", err)
		}
		if err := s.audit(ctx, q, system, sub.UserID, "billing.plan_change", map[string]any{"from": plan.Name, "to": next.Name}); err != nil {
			return err
		}
		if err := s.tell(ctx, tx, sub.UserID, EmailPlanChanged, map[string]any{"From": plan.Name, "Plan": next.Name}); err != nil {
			return err
		}
		return s.tellOverLimits(ctx, tx, sub.UserID)
	case sub.Status == StatusActive && !end.After(now):
		if _, err := q.SubscriptionSetStatus(ctx, queries.SubscriptionSetStatusParams{UserID: sub.UserID, Status: StatusPastDue}); err != nil {
			return fmt.Errorf("past due: %w", err)
		}
		if err := s.audit(ctx, q, system, sub.UserID, "billing.past_due", map[string]any{"plan": plan.Name, "periodEnd": end}); err != nil {
			return err
		}
		return s.tell(ctx, tx, sub.UserID, EmailPeriodPastDue, map[string]any{
			"Plan": plan.Name, "Until": end.Add(st.Grace()).UTC().Format(time.DateOnly),
		})
	case sub.Status == StatusPastDue:
		return s.toDefault(ctx, tx, sub, def, StatusExpired, EmailPlanExpired, map[string]any{"Plan": plan.Name, "Default": def.Name})
	default:
		if err := q.SubscriptionSetEndingNotified(ctx, sub.UserID); err != nil {
			return fmt.Errorf("record notice: %w", err)
		}
		what := "renew"
		if sub.ScheduledPlanID.Valid {
			what = "change"
		}
		return s.tell(ctx, tx, sub.UserID, EmailPeriodEnding, map[string]any{
			"Plan": plan.Name, "Until": end.UTC().Format(time.DateOnly), "Then": what,
		})
	}
}

// toDefault puts the user on the default plan with status, told, and
// told again if they are over its limits.
func (s *Service) toDefault(ctx context.Context, tx pgx.Tx, sub queries.Subscription, def queries.Plan, status, template string, data map[string]any) error {
	q := queries.New(tx)
	if _, err := q.SubscriptionSetPlan(ctx, queries.SubscriptionSetPlanParams{UserID: sub.UserID, PlanID: def.ID, Status: status}); err != nil {
		return fmt.Errorf("to the default plan: %w", err)
	}
	if err := s.audit(ctx, q, audit.Actor{}, sub.UserID, "billing."+status, map[string]any{"plan": data["Plan"], "to": def.Name}); err != nil {
		return err
	}
	data["Default"] = def.Name
	if err := s.tell(ctx, tx, sub.UserID, template, data); err != nil {
		return err
	}
	return s.tellOverLimits(ctx, tx, sub.UserID)
}

// tellOverLimits tells the user when they have more than their plan now
// allows: nothing is removed, and new clusters and nodes are refused.
func (s *Service) tellOverLimits(ctx context.Context, tx pgx.Tx, userID int64) error {
	q := queries.New(tx)
	plan, err := q.PlanForUser(ctx, userID)
	if err != nil {
		return fmt.Errorf("plan of user %d: %w", userID, err)
	}
	u, err := q.BillingUsage(ctx, userID)
	if err != nil {
		return fmt.Errorf("usage of user %d: %w", userID, err)
	}
	var over []string
	if u.Clusters > int64(plan.MaxClusters) {
		over = append(over, fmt.Sprintf("clusters %d/%d", u.Clusters, plan.MaxClusters))
	}
	if u.MostNodes > int64(plan.MaxNodesPerCluster) {
		over = append(over, fmt.Sprintf("nodes per cluster %d/%d", u.MostNodes, plan.MaxNodesPerCluster))
	}
	if u.MostHostnames > int64(plan.MaxHostnamesPerCluster) {
		over = append(over, fmt.Sprintf("host names per cluster %d/%d", u.MostHostnames, plan.MaxHostnamesPerCluster))
	}
	if len(over) == 0 {
		return nil
	}
	return s.tell(ctx, tx, userID, EmailOverLimit, map[string]any{"Plan": plan.Name, "Over": strings.Join(over, ", ")})
}

// AdminSetPlan puts a user on a plan by hand, with no period end (until
// an admin changes it), for a reason; audited and told to the user.
func (s *Service) AdminSetPlan(ctx context.Context, userID, planID int64, reason string, actor audit.Actor) error {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return ErrReasonRequired
	}
	return s.asAdminTx(ctx, actor, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if _, err := q.SubscriptionLock(ctx, userID); err != nil {
			return lockError(userID, err)
		}
		plan, err := q.PlanGet(ctx, planID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrPlanNotFound
		}
		if err != nil {
			return fmt.Errorf("load plan %d: %w", planID, err)
		}
		if _, err := q.SubscriptionSetPlan(ctx, queries.SubscriptionSetPlanParams{UserID: userID, PlanID: plan.ID, Status: StatusActive}); err != nil {
			return fmt.Errorf("set plan: %w", err)
		}
		if err := s.audit(ctx, q, actor, userID, "billing.admin_set_plan", map[string]any{"plan": plan.Name, "reason": reason}); err != nil {
			return err
		}
		if err := s.tell(ctx, tx, userID, EmailPlanByAdmin, map[string]any{"Plan": plan.Name}); err != nil {
			return err
		}
		return s.tellOverLimits(ctx, tx, userID)
	})
}

// AdminExtend moves the end of the user's paid period by days, for a
// reason: past due becomes active again if the new end is ahead.
func (s *Service) AdminExtend(ctx context.Context, userID int64, days int, reason string, actor audit.Actor) error {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return ErrReasonRequired
	}
	if days < 1 || days > 366 {
		return ErrExtendDays
	}
	return s.asAdminTx(ctx, actor, func(tx pgx.Tx) error {
		q := queries.New(tx)
		sub, err := q.SubscriptionLock(ctx, userID)
		if err != nil {
			return lockError(userID, err)
		}
		if !sub.CurrentPeriodEnd.Valid {
			return ErrNoPeriod
		}
		end := sub.CurrentPeriodEnd.Time.AddDate(0, 0, days)
		if _, err := q.SubscriptionSetPeriodEnd(ctx, queries.SubscriptionSetPeriodEndParams{UserID: userID, PeriodEnd: ts(end)}); err != nil {
			return fmt.Errorf("extend period: %w", err)
		}
		if err := s.audit(ctx, q, actor, userID, "billing.admin_extend", map[string]any{"days": days, "until": end, "reason": reason}); err != nil {
			return err
		}
		return s.tell(ctx, tx, userID, EmailPeriodExtended, map[string]any{"Until": end.UTC().Format(time.DateOnly)})
	})
}

// AdminCancel ends the user's plan at once: the default plan, cancelled,
// for a reason.
func (s *Service) AdminCancel(ctx context.Context, userID int64, reason string, actor audit.Actor) error {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return ErrReasonRequired
	}
	return s.asAdminTx(ctx, actor, func(tx pgx.Tx) error {
		q := queries.New(tx)
		sub, err := q.SubscriptionLock(ctx, userID)
		if err != nil {
			return lockError(userID, err)
		}
		if err := s.audit(ctx, q, actor, userID, "billing.admin_cancel", map[string]any{"planId": sub.PlanID, "reason": reason}); err != nil {
			return err
		}
		return s.cancelNow(ctx, tx, sub)
	})
}

// cancelNow puts the user of sub (locked) on the default plan at once,
// cancelled, and tells them.
func (s *Service) cancelNow(ctx context.Context, tx pgx.Tx, sub queries.Subscription) error {
	q := queries.New(tx)
	def, err := q.PlanDefault(ctx)
	if err != nil {
		return fmt.Errorf("default plan: %w", err)
	}
	plan, err := q.PlanGet(ctx, sub.PlanID)
	if err != nil {
		return fmt.Errorf("load plan: %w", err)
	}
	return s.toDefault(ctx, tx, sub, def, StatusCancelled, EmailPlanCancelled, map[string]any{"Plan": plan.Name})
}

// lockError is a failed SubscriptionLock: no row is no such user.
func lockError(userID int64, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrUserNotFound
	}
	return fmt.Errorf("lock subscription of user %d: %w", userID, err)
}
