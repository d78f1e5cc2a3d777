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
	"github.com/kubebyon/kubebyon/internal/orgs"
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

// EndingNotice is how long before a period's end its owners are told.
const EndingNotice = 7 * 24 * time.Hour

// Who may do what with an organization's billing (issue 38): every
// member reads its plan, what it uses of it, its subscription and the
// plans on offer (orgs.Read), since every member meets the limits and is
// sent to the Plan page when one refuses; its owners alone read its
// orders and receipts (orderReaders), and order, cancel, pay and cancel
// the plan (orgs.Billing). A member whose role does not allow it is
// orgs.ErrForbidden; anyone else finds nothing (orgs.ErrNotFound, or
// ErrOrderNotFound for an order). Jobs and admins act on an organization
// by its id.

// Subscription is an organization's subscription with its plan, the plan
// that follows at the period's end, if any, and the organization's name;
// Personal: it is a user's personal organization.
type Subscription struct {
	queries.Subscription
	Plan          queries.Plan
	ScheduledPlan string
	OrgName       string
	Personal      bool
}

// SubscriptionOf reads the subscription of who's organization, for any
// member.
func (s *Service) SubscriptionOf(ctx context.Context, who orgs.Acting) (Subscription, error) {
	q := queries.New(s.Pool)
	r, err := q.SubscriptionWithPlanForMember(ctx, queries.SubscriptionWithPlanForMemberParams{
		OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Subscription{}, refusal(ctx, q, who)
	}
	if err != nil {
		return Subscription{}, fmt.Errorf("subscription of organization %d: %w", who.OrgID, err)
	}
	return Subscription{Subscription: r.Subscription, Plan: r.Plan, ScheduledPlan: r.ScheduledPlanName, OrgName: r.OrgName, Personal: r.OrgPersonal}, nil
}

// SubscriptionOfOrg reads organization orgID's subscription, for an
// admin's page: orgs.ErrNotFound when there is no such organization.
func (s *Service) SubscriptionOfOrg(ctx context.Context, orgID int64) (Subscription, error) {
	r, err := queries.New(s.Pool).SubscriptionWithPlan(ctx, orgID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Subscription{}, orgs.ErrNotFound
	}
	if err != nil {
		return Subscription{}, fmt.Errorf("subscription of organization %d: %w", orgID, err)
	}
	return Subscription{Subscription: r.Subscription, Plan: r.Plan, ScheduledPlan: r.ScheduledPlanName, OrgName: r.OrgName, Personal: r.OrgPersonal}, nil
}

// lockFor locks the subscription of who's organization for an owner
// (orgs.Billing), or says why not (refusal).
func lockFor(ctx context.Context, q *queries.Queries, who orgs.Acting) (queries.Subscription, error) {
	sub, err := q.SubscriptionLockForMember(ctx, queries.SubscriptionLockForMemberParams{
		OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Billing),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return sub, refusal(ctx, q, who)
	}
	if err != nil {
		return sub, fmt.Errorf("lock subscription of organization %d: %w", who.OrgID, err)
	}
	return sub, nil
}

// refusal is why who was refused their organization's billing:
// orgs.ErrForbidden for a member (whose role, or key, does not allow
// it), orgs.ErrNotFound for anyone else.
func refusal(ctx context.Context, q *queries.Queries, who orgs.Acting) error {
	member, err := q.OrgMemberIn(ctx, queries.OrgMemberInParams{OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read)})
	switch {
	case err != nil:
		return fmt.Errorf("check membership: %w", err)
	case member:
		return orgs.ErrForbidden
	}
	return orgs.ErrNotFound
}

// SetCancel cancels the paid plan of who's organization at the period's
// end (cancel), or takes that back (resume), for an owner. A scheduled
// plan change falls away either way.
func (s *Service) SetCancel(ctx context.Context, who orgs.Acting, cancel bool, actor audit.Actor) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		sub, err := lockFor(ctx, q, who)
		if err != nil {
			return err
		}
		if !sub.CurrentPeriodEnd.Valid || sub.Status != StatusActive {
			return ErrNoPeriod
		}
		if _, err := q.SubscriptionSetCancel(ctx, queries.SubscriptionSetCancelParams{OrgID: sub.OrgID, Cancel: cancel}); err != nil {
			return fmt.Errorf("cancel subscription: %w", err)
		}
		action := "billing.resume"
		if cancel {
			action = "billing.cancel"
		}
		return s.audit(ctx, q, actor, sub.OrgID, action, map[string]any{"periodEnd": sub.CurrentPeriodEnd.Time})
	})
}

// RunPeriods does what is due on subscriptions at now, a bounded batch
// (it reports how many rows it handled; a full batch means call again):
//   - an active period that ended: a cancel puts the organization on the
//     default plan (cancelled); a scheduled change moves to its plan, at once for
//     a free one, else past due until its period is paid; otherwise past
//     due, the plan kept for the grace period;
//   - a past-due period whose grace ran out: the default plan (expired);
//   - a period ending within EndingNotice: its owners are told, once.
//
// Each subscription is an organization's, done on its own (its row
// locked, others' skipped). Nothing is deleted: limits that fall below
// what the organization has refuse new clusters and nodes, and its owners
// are told.
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
				return fmt.Errorf("subscription of organization %d: %w", sub.OrgID, err)
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
			if _, err := q.SubscriptionSetPlan(ctx, queries.SubscriptionSetPlanParams{OrgID: sub.OrgID, PlanID: next.ID, Status: StatusActive}); err != nil {
				return fmt.Errorf("switch plan: %w", err)
			}
		} else if _, err := q.SubscriptionMoveToScheduled(ctx, queries.SubscriptionMoveToScheduledParams{
			OrgID: sub.OrgID, Period: pgtype.Text{String: string(period), Valid: true},
		}); err != nil {
			return fmt.Errorf("move to scheduled plan: %w", err)
		}
		if err := s.audit(ctx, q, system, sub.OrgID, "billing.plan_change", map[string]any{"from": plan.Name, "to": next.Name}); err != nil {
			return err
		}
		if err := s.tell(ctx, tx, sub.OrgID, EmailPlanChanged, map[string]any{"From": plan.Name, "Plan": next.Name}); err != nil {
			return err
		}
		return s.tellOverLimits(ctx, tx, sub.OrgID)
	case sub.Status == StatusActive && !end.After(now):
		if _, err := q.SubscriptionSetStatus(ctx, queries.SubscriptionSetStatusParams{OrgID: sub.OrgID, Status: StatusPastDue}); err != nil {
			return fmt.Errorf("past due: %w", err)
		}
		if err := s.audit(ctx, q, system, sub.OrgID, "billing.past_due", map[string]any{"plan": plan.Name, "periodEnd": end}); err != nil {
			return err
		}
		return s.tell(ctx, tx, sub.OrgID, EmailPeriodPastDue, map[string]any{
			"Plan": plan.Name, "Until": end.Add(st.Grace()).UTC().Format(time.DateOnly),
		})
	case sub.Status == StatusPastDue:
		return s.toDefault(ctx, tx, sub, def, StatusExpired, EmailPlanExpired, map[string]any{"Plan": plan.Name, "Default": def.Name})
	default:
		if err := q.SubscriptionSetEndingNotified(ctx, sub.OrgID); err != nil {
			return fmt.Errorf("record notice: %w", err)
		}
		what := "renew"
		if sub.ScheduledPlanID.Valid {
			what = "change"
		}
		return s.tell(ctx, tx, sub.OrgID, EmailPeriodEnding, map[string]any{
			"Plan": plan.Name, "Until": end.UTC().Format(time.DateOnly), "Then": what,
		})
	}
}

// toDefault puts the organization of sub on the default plan with
// status, its owners told, and told again if it is over its limits.
func (s *Service) toDefault(ctx context.Context, tx pgx.Tx, sub queries.Subscription, def queries.Plan, status, template string, data map[string]any) error {
	q := queries.New(tx)
	if _, err := q.SubscriptionSetPlan(ctx, queries.SubscriptionSetPlanParams{OrgID: sub.OrgID, PlanID: def.ID, Status: status}); err != nil {
		return fmt.Errorf("to the default plan: %w", err)
	}
	if err := s.audit(ctx, q, audit.Actor{}, sub.OrgID, "billing."+status, map[string]any{"plan": data["Plan"], "to": def.Name}); err != nil {
		return err
	}
	data["Default"] = def.Name
	if err := s.tell(ctx, tx, sub.OrgID, template, data); err != nil {
		return err
	}
	return s.tellOverLimits(ctx, tx, sub.OrgID)
}

// tellOverLimits tells the organization's owners when it has more than
// its plan now allows: nothing is removed, and new clusters and nodes are
// refused.
func (s *Service) tellOverLimits(ctx context.Context, tx pgx.Tx, orgID int64) error {
	q := queries.New(tx)
	plan, err := q.PlanForOrg(ctx, orgID)
	if err != nil {
		return fmt.Errorf("plan of organization %d: %w", orgID, err)
	}
	u, err := q.BillingUsage(ctx, orgID)
	if err != nil {
		return fmt.Errorf("usage of organization %d: %w", orgID, err)
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
	return s.tell(ctx, tx, orgID, EmailOverLimit, map[string]any{"Plan": plan.Name, "Over": strings.Join(over, ", ")})
}

// AdminSetPlan puts organization orgID on a plan by hand, with no period
// end (until an admin changes it), for a reason; audited and told to its
// owners.
func (s *Service) AdminSetPlan(ctx context.Context, orgID, planID int64, reason string, actor audit.Actor) error {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return ErrReasonRequired
	}
	return s.asAdminTx(ctx, actor, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if _, err := q.SubscriptionLock(ctx, orgID); err != nil {
			return lockError(orgID, err)
		}
		plan, err := q.PlanGet(ctx, planID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrPlanNotFound
		}
		if err != nil {
			return fmt.Errorf("load plan %d: %w", planID, err)
		}
		if _, err := q.SubscriptionSetPlan(ctx, queries.SubscriptionSetPlanParams{OrgID: orgID, PlanID: plan.ID, Status: StatusActive}); err != nil {
			return fmt.Errorf("set plan: %w", err)
		}
		if err := s.audit(ctx, q, actor, orgID, "billing.admin_set_plan", map[string]any{"plan": plan.Name, "reason": reason}); err != nil {
			return err
		}
		if err := s.tell(ctx, tx, orgID, EmailPlanByAdmin, map[string]any{"Plan": plan.Name}); err != nil {
			return err
		}
		return s.tellOverLimits(ctx, tx, orgID)
	})
}

// AdminExtend moves the end of organization orgID's paid period by days,
// for a reason: past due becomes active again if the new end is ahead.
func (s *Service) AdminExtend(ctx context.Context, orgID int64, days int, reason string, actor audit.Actor) error {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return ErrReasonRequired
	}
	if days < 1 || days > 366 {
		return ErrExtendDays
	}
	return s.asAdminTx(ctx, actor, func(tx pgx.Tx) error {
		q := queries.New(tx)
		sub, err := q.SubscriptionLock(ctx, orgID)
		if err != nil {
			return lockError(orgID, err)
		}
		if !sub.CurrentPeriodEnd.Valid {
			return ErrNoPeriod
		}
		end := sub.CurrentPeriodEnd.Time.AddDate(0, 0, days)
		if _, err := q.SubscriptionSetPeriodEnd(ctx, queries.SubscriptionSetPeriodEndParams{OrgID: orgID, PeriodEnd: ts(end)}); err != nil {
			return fmt.Errorf("extend period: %w", err)
		}
		if err := s.audit(ctx, q, actor, orgID, "billing.admin_extend", map[string]any{"days": days, "until": end, "reason": reason}); err != nil {
			return err
		}
		return s.tell(ctx, tx, orgID, EmailPeriodExtended, map[string]any{"Until": end.UTC().Format(time.DateOnly)})
	})
}

// AdminCancel ends organization orgID's plan at once: the default plan,
// cancelled, for a reason.
func (s *Service) AdminCancel(ctx context.Context, orgID int64, reason string, actor audit.Actor) error {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return ErrReasonRequired
	}
	return s.asAdminTx(ctx, actor, func(tx pgx.Tx) error {
		q := queries.New(tx)
		sub, err := q.SubscriptionLock(ctx, orgID)
		if err != nil {
			return lockError(orgID, err)
		}
		if err := s.audit(ctx, q, actor, orgID, "billing.admin_cancel", map[string]any{"planId": sub.PlanID, "reason": reason}); err != nil {
			return err
		}
		return s.cancelNow(ctx, tx, sub)
	})
}

// cancelNow puts the organization of sub (locked) on the default plan at
// once, cancelled, and tells its owners.
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

// lockError is a failed SubscriptionLock: no row is no such
// organization.
func lockError(orgID int64, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return orgs.ErrNotFound
	}
	return fmt.Errorf("lock subscription of organization %d: %w", orgID, err)
}
