package billing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"time"

	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/etag"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// Service is the billing domain's actions.
type Service struct {
	Pool *pgxpool.Pool
	// Box seals the Stripe keys and the mail of notices.
	Box *secrets.Box
	// River inserts the notices' emails (nil: the running job's client).
	River *river.Client[pgx.Tx]
	// Now is the clock (nil: time.Now), for tests of periods and expiry.
	Now func() time.Time
	// StripeURL is Stripe's API (empty: api.stripe.com; tests:
	// stripe-mock).
	StripeURL string
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Errors users see (catalog message IDs).
var (
	ErrPlanNotFound = errors.New("ErrPlanNotFound")
	// ErrPlanDefault: the default plan cannot be archived.
	ErrPlanDefault = errors.New("ErrPlanDefaultArchive")
	// ErrPlanArchived: an archived plan cannot become the default.
	ErrPlanArchived = errors.New("ErrPlanArchivedDefault")
)

// PlanInput is a plan as an admin types it: prices as decimals in the
// currency's major units, empty for a period not on sale. A plan that
// costs nothing says so (Free) and has no prices: a price of 0 is never
// read from an empty field.
type PlanInput struct {
	Name, NameZh, DescriptionEn, DescriptionZh string
	MaxClusters, MaxNodesPerCluster            int32
	MaxHostnamesPerCluster                     int32
	IngressAllowed, Public, Free               bool
	Currency, PriceMonthly, PriceYearly        string
	SortOrder                                  int32
	// Backends are the control-plane backends the plan's clusters may
	// run on; none means the platform's default one.
	Backends []string
}

// Field names of a plan's form, for errors.
const (
	FieldPlanName         = "name"
	FieldPlanNameZh       = "name_zh"
	FieldPlanDescEn       = "description_en"
	FieldPlanDescZh       = "description_zh"
	FieldPlanClusters     = "max_clusters"
	FieldPlanNodes        = "max_nodes_per_cluster"
	FieldPlanHostnames    = "max_hostnames_per_cluster"
	FieldPlanCurrency     = "currency"
	FieldPlanPriceMonthly = "price_monthly"
	FieldPlanPriceYearly  = "price_yearly"
	FieldPlanBackends     = "backends"
)

// Limits on what a plan's fields hold.
const (
	maxPlanName        = 60
	maxPlanDescription = 500
	maxPlanLimit       = 100000
)

// params checks in and gives the row's values; bad fields are named in
// input.Errors.
func (in PlanInput) params() (queries.PlanCreateParams, error) {
	errs := input.Errors{}
	text := func(field, s string, max int, required bool) string {
		s = strings.TrimSpace(s)
		switch {
		case !input.Storable(s):
			errs[field] = input.ErrUnstorable
		case required && s == "":
			errs[field] = "ErrPlanNameRequired"
		case utf8.RuneCountInString(s) > max:
			errs[field] = "ErrPlanTextTooLong"
		}
		return s
	}
	limit := func(field string, n int32) {
		if n < 0 || n > maxPlanLimit {
			errs[field] = "ErrPlanLimit"
		}
	}
	p := queries.PlanCreateParams{
		Name:           text(FieldPlanName, in.Name, maxPlanName, true),
		NameZh:         text(FieldPlanNameZh, in.NameZh, maxPlanName, false),
		DescriptionEn:  text(FieldPlanDescEn, in.DescriptionEn, maxPlanDescription, false),
		DescriptionZh:  text(FieldPlanDescZh, in.DescriptionZh, maxPlanDescription, false),
		MaxClusters:    in.MaxClusters,
		IngressAllowed: in.IngressAllowed, Public: in.Public, SortOrder: in.SortOrder, Free: in.Free,
		MaxNodesPerCluster: in.MaxNodesPerCluster, MaxHostnamesPerCluster: in.MaxHostnamesPerCluster,
		Backends: []string{},
	}
	for _, b := range settings.Backends { // in their order, each once
		if slices.Contains(in.Backends, b) {
			p.Backends = append(p.Backends, b)
		}
	}
	if len(p.Backends) != len(slices.Compact(slices.Sorted(slices.Values(in.Backends)))) {
		errs[FieldPlanBackends] = "ErrPlanBackends"
	}
	limit(FieldPlanClusters, in.MaxClusters)
	limit(FieldPlanNodes, in.MaxNodesPerCluster)
	limit(FieldPlanHostnames, in.MaxHostnamesPerCluster)
	if _, err := unit(in.Currency); err != nil {
		errs[FieldPlanCurrency] = err.Error()
	} else {
		p.Currency = strings.ToUpper(strings.TrimSpace(in.Currency))
		price := func(field, s string) pgtype.Int8 {
			s = strings.TrimSpace(s)
			if s == "" {
				return pgtype.Int8{}
			}
			if in.Free {
				errs[field] = "ErrPlanFreeHasPrice"
				return pgtype.Int8{}
			}
			m, err := ParseMoney(s, p.Currency)
			switch {
			case err != nil:
				errs[field] = err.Error()
			case m.Minor == 0:
				errs[field] = "ErrPlanPriceZero"
			}
			return pgtype.Int8{Int64: m.Minor, Valid: err == nil && m.Minor > 0}
		}
		p.PriceMonthly = price(FieldPlanPriceMonthly, in.PriceMonthly)
		p.PriceYearly = price(FieldPlanPriceYearly, in.PriceYearly)
		if !in.Free && strings.TrimSpace(in.PriceMonthly) == "" && strings.TrimSpace(in.PriceYearly) == "" {
			errs[FieldPlanPriceMonthly] = "ErrPlanPriceRequired"
		}
	}
	if len(errs) > 0 {
		return queries.PlanCreateParams{}, errs
	}
	return p, nil
}

// Plans are every plan, archived ones last.
func (s *Service) Plans(ctx context.Context) ([]queries.Plan, error) {
	plans, err := queries.New(s.Pool).PlanList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list plans: %w", err)
	}
	return plans, nil
}

// PlansFor is up to n (all when n is 0) of the plans who's organization
// may choose, in the admin's order, after the plan after (0: from the
// first): the public plans on sale, and its own. Any member reads them;
// anyone else reads none.
func (s *Service) PlansFor(ctx context.Context, who orgs.Acting, after int64, n int32) ([]queries.Plan, error) {
	plans, err := queries.New(s.Pool).PlanListForMember(ctx, queries.PlanListForMemberParams{
		OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read),
		AfterID: after, RowLimit: pgtype.Int4{Int32: n, Valid: n > 0},
	})
	if err != nil {
		return nil, fmt.Errorf("list plans of organization %d: %w", who.OrgID, err)
	}
	return plans, nil
}

// Plan is one plan.
func (s *Service) Plan(ctx context.Context, id int64) (queries.Plan, error) {
	p, err := queries.New(s.Pool).PlanGet(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return queries.Plan{}, ErrPlanNotFound
	}
	if err != nil {
		return queries.Plan{}, fmt.Errorf("load plan %d: %w", id, err)
	}
	return p, nil
}

// CreatePlan adds a plan, for an active admin (audited admin.plan_create).
func (s *Service) CreatePlan(ctx context.Context, in PlanInput, actor audit.Actor) (queries.Plan, error) {
	params, err := in.params()
	if err != nil {
		return queries.Plan{}, err
	}
	var out queries.Plan
	err = s.asAdmin(ctx, actor, func(q *queries.Queries) error {
		if out, err = q.PlanCreate(ctx, params); err != nil {
			return planWriteError(err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "admin.plan_create", TargetType: "plan", TargetID: fmt.Sprint(out.ID),
			Details: map[string]any{"name": out.Name},
		})
	})
	return out, err
}

// UpdatePlan changes a plan, for an active admin (audited
// admin.plan_update with the fields changed). Lowering a limit below what
// subscribers use is allowed: over is how many of its subscribers
// (organizations) it puts, or leaves, over a limit. With an If-Match in ctx (etag.WithMatch), only
// while the plan has that tag (PlanTag), checked under the plan's row
// lock: else etag.ErrPreconditionFailed.
func (s *Service) UpdatePlan(ctx context.Context, id int64, in PlanInput, actor audit.Actor) (_ queries.Plan, over int64, _ error) {
	params, err := in.params()
	if err != nil {
		return queries.Plan{}, 0, err
	}
	var out queries.Plan
	err = s.asAdmin(ctx, actor, func(q *queries.Queries) error {
		before, err := lockPlan(ctx, q, id)
		if err != nil {
			return err
		}
		tag, err := PlanTag(before)
		if err != nil {
			return err
		}
		if err := etag.Check(ctx, tag); err != nil {
			return err
		}
		changed, err := audit.Changed(editable(before), params)
		if err != nil {
			return err
		}
		if len(changed) == 0 {
			out = before
			return nil
		}
		slices.Sort(changed)
		out, err = q.PlanUpdate(ctx, queries.PlanUpdateParams{
			ID: id, Name: params.Name, NameZh: params.NameZh, DescriptionEn: params.DescriptionEn, DescriptionZh: params.DescriptionZh,
			MaxClusters: params.MaxClusters, MaxNodesPerCluster: params.MaxNodesPerCluster,
			MaxHostnamesPerCluster: params.MaxHostnamesPerCluster, IngressAllowed: params.IngressAllowed,
			Currency: params.Currency, Free: params.Free, PriceMonthly: params.PriceMonthly, PriceYearly: params.PriceYearly,
			Public: params.Public, SortOrder: params.SortOrder, Backends: params.Backends,
		})
		if err != nil {
			return planWriteError(err)
		}
		if over, err = q.PlanOrgsOverLimits(ctx, id); err != nil {
			return fmt.Errorf("count the organizations on plan %d over its limits: %w", id, err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "admin.plan_update", TargetType: "plan", TargetID: fmt.Sprint(id),
			// users_over_limits, as it was named when subscribers were users.
			Details: map[string]any{"name": out.Name, "changed": changed, "users_over_limits": over},
		})
	})
	return out, over, err
}

// editable are a plan's fields an admin edits, as PlanInput.params
// gives them.
// PlanTag is the entity tag of what UpdatePlan changes of plan p.
func PlanTag(p queries.Plan) (string, error) {
	return etag.Of(editable(p))
}

func editable(p queries.Plan) queries.PlanCreateParams {
	return queries.PlanCreateParams{
		Name: p.Name, NameZh: p.NameZh, DescriptionEn: p.DescriptionEn, DescriptionZh: p.DescriptionZh,
		MaxClusters: p.MaxClusters, MaxNodesPerCluster: p.MaxNodesPerCluster, MaxHostnamesPerCluster: p.MaxHostnamesPerCluster,
		IngressAllowed: p.IngressAllowed, Currency: p.Currency, Free: p.Free, PriceMonthly: p.PriceMonthly, PriceYearly: p.PriceYearly,
		Public: p.Public, SortOrder: p.SortOrder, Backends: append([]string{}, p.Backends...),
	}
}

// SetPlanArchived archives a plan (nobody new gets it; its users keep
// it) or brings it back, for an active admin (audited). The default plan
// cannot be archived.
func (s *Service) SetPlanArchived(ctx context.Context, id int64, archived bool, actor audit.Actor) (queries.Plan, error) {
	var out queries.Plan
	err := s.asAdmin(ctx, actor, func(q *queries.Queries) error {
		p, err := lockPlan(ctx, q, id)
		if err != nil {
			return err
		}
		if archived && p.IsDefault {
			return ErrPlanDefault
		}
		if out, err = q.PlanSetArchived(ctx, queries.PlanSetArchivedParams{ID: id, Archived: archived}); err != nil {
			return fmt.Errorf("archive plan %d: %w", id, err)
		}
		action := "admin.plan_archive"
		if !archived {
			action = "admin.plan_unarchive"
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: action, TargetType: "plan", TargetID: fmt.Sprint(id), Details: map[string]any{"name": p.Name}})
	})
	return out, err
}

// MakeDefault makes a plan the default (free) plan, the one of every
// organization that never bought one, for an active admin (audited).
// There is always exactly one. The organizations on the old default with
// no paid period move to the new one; new organizations and ended plans
// get it from now on.
func (s *Service) MakeDefault(ctx context.Context, id int64, actor audit.Actor) (queries.Plan, error) {
	var out queries.Plan
	err := s.asAdmin(ctx, actor, func(q *queries.Queries) error {
		p, err := lockPlan(ctx, q, id)
		if err != nil {
			return err
		}
		if p.ArchivedAt.Valid {
			return ErrPlanArchived
		}
		// Before the old default is cleared: its subscribers with no
		// paid period follow.
		moved, err := q.SubscriptionsFollowDefault(ctx, id)
		if err != nil {
			return fmt.Errorf("move the default plan's subscribers: %w", err)
		}
		if err := q.PlanClearDefault(ctx, id); err != nil {
			return fmt.Errorf("clear the default plan: %w", err)
		}
		if out, err = q.PlanMakeDefault(ctx, id); err != nil {
			return fmt.Errorf("make plan %d the default: %w", id, err)
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "admin.plan_default", TargetType: "plan", TargetID: fmt.Sprint(id), Details: map[string]any{"name": p.Name, "usersMoved": moved}})
	})
	return out, err
}

// lockPlan locks plan id's row for the rest of the transaction.
func lockPlan(ctx context.Context, q *queries.Queries, id int64) (queries.Plan, error) {
	p, err := q.PlanLock(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return queries.Plan{}, ErrPlanNotFound
	}
	if err != nil {
		return queries.Plan{}, fmt.Errorf("lock plan %d: %w", id, err)
	}
	return p, nil
}

// asAdmin runs fn in a transaction that holds the acting admin's row:
// an admin demoted meanwhile is refused (adminauth.ErrNotAdmin).
func (s *Service) asAdmin(ctx context.Context, actor audit.Actor, fn func(*queries.Queries) error) error {
	return s.asAdminTx(ctx, actor, func(tx pgx.Tx) error { return fn(queries.New(tx)) })
}

// planWriteError names the field of a constraint a write broke.
func planWriteError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "plans_name_key" {
		return input.Errors{FieldPlanName: "ErrPlanNameTaken"}
	}
	return fmt.Errorf("write plan: %w", err)
}

// OrgsOverLimits is how many of the plan's subscribers (organizations)
// use more than it allows.
func (s *Service) OrgsOverLimits(ctx context.Context, id int64) (int64, error) {
	n, err := queries.New(s.Pool).PlanOrgsOverLimits(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("count the organizations on plan %d over its limits: %w", id, err)
	}
	return n, nil
}

// Usage is what an organization uses of what its plan allows, with its
// subscription (whose plan Plan is).
type Usage struct {
	Subscription Subscription
	Plan         queries.Plan
	// Clusters are the live clusters; MostNodes and MostHostnames the
	// most recorded nodes and bound host names in any one of them.
	Clusters, MostNodes, MostHostnames int64
}

// UsageOf is the subscription and plan of who's organization and what it
// uses of it, for any member.
func (s *Service) UsageOf(ctx context.Context, who orgs.Acting) (Usage, error) {
	sub, err := s.SubscriptionOf(ctx, who)
	if err != nil {
		return Usage{}, err
	}
	// SubscriptionOf checked the membership.
	return s.usage(ctx, sub)
}

// UsageOfOrg is UsageOf for organization orgID, for an admin's page:
// orgs.ErrNotFound when there is no such organization.
func (s *Service) UsageOfOrg(ctx context.Context, orgID int64) (Usage, error) {
	sub, err := s.SubscriptionOfOrg(ctx, orgID)
	if err != nil {
		return Usage{}, err
	}
	return s.usage(ctx, sub)
}

// usage is what the organization of sub uses of its plan.
func (s *Service) usage(ctx context.Context, sub Subscription) (Usage, error) {
	u, err := queries.New(s.Pool).BillingUsage(ctx, sub.OrgID)
	if err != nil {
		return Usage{}, fmt.Errorf("usage of organization %d: %w", sub.OrgID, err)
	}
	return Usage{Subscription: sub, Plan: sub.Plan, Clusters: u.Clusters, MostNodes: u.MostNodes, MostHostnames: u.MostHostnames}, nil
}

// Price is a plan's price for one period, as Money; ok is false where
// the period is not on sale (and for a free plan, which has no prices).
func Price(p queries.Plan, period Period) (m Money, ok bool) {
	price := p.PriceMonthly
	if period == Yearly {
		price = p.PriceYearly
	}
	return Money{Minor: price.Int64, Currency: p.Currency}, price.Valid && price.Int64 > 0
}
