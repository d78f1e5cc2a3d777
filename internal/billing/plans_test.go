package billing_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// person makes an account of role; its id.
func person(t *testing.T, pool *pgxpool.Pool, email, role string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, pool.QueryRow(context.Background(),
		`INSERT INTO users (email, name, role, email_verified_at) VALUES ($1, $1, $2, now()) RETURNING id`, email, role).Scan(&id))
	return id
}

func pro() billing.PlanInput {
	return billing.PlanInput{
		Name: "Pro", NameZh: "专业版", DescriptionEn: "For teams", DescriptionZh: "团队使用",
		MaxClusters: 10, MaxNodesPerCluster: 50, MaxHostnamesPerCluster: 20, IngressAllowed: true, Public: true,
		Currency: "cny", PriceMonthly: "99", PriceYearly: "990.00", SortOrder: 2,
	}
}

// TestPlans: an admin creates, edits, archives and picks the default
// plan; prices are stored as minor units; bad input names its fields; the
// default plan cannot be archived; lowering a limit below what users use
// is allowed and counted; everything is audited; a non-admin is refused.
func TestPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	svc := &billing.Service{Pool: pool}
	admin := audit.Actor{UserID: person(t, pool, "admin@example.com", "admin")}

	p, err := svc.CreatePlan(ctx, pro(), admin)
	require.NoError(t, err)
	require.Equal(t, "CNY", p.Currency)
	require.Equal(t, int64(9900), p.PriceMonthly.Int64)
	require.Equal(t, int64(99000), p.PriceYearly.Int64)
	require.False(t, p.Free)
	require.Equal(t, "专业版", p.NameZh)
	require.False(t, p.IsDefault)

	// Bad input: each field says why; nothing is written.
	bad := pro()
	bad.Name, bad.MaxClusters, bad.PriceMonthly, bad.PriceYearly = " ", -1, "9.999", "1e3"
	_, err = svc.CreatePlan(ctx, bad, admin)
	var fe input.Errors
	require.ErrorAs(t, err, &fe)
	require.Equal(t, input.Errors{
		billing.FieldPlanName: "ErrPlanNameRequired", billing.FieldPlanClusters: "ErrPlanLimit",
		billing.FieldPlanPriceMonthly: "ErrBillingAmount", billing.FieldPlanPriceYearly: "ErrBillingAmount",
	}, fe)
	bad = pro()
	bad.Currency = "BTC"
	_, err = svc.CreatePlan(ctx, bad, admin)
	require.ErrorAs(t, err, &fe)
	require.Equal(t, input.Errors{billing.FieldPlanCurrency: "ErrBillingCurrency"}, fe)
	_, err = svc.CreatePlan(ctx, pro(), admin)
	require.ErrorAs(t, err, &fe)
	require.Equal(t, input.Errors{billing.FieldPlanName: "ErrPlanNameTaken"}, fe)
	plans, err := svc.Plans(ctx)
	require.NoError(t, err)
	require.Len(t, plans, 2, "the free plan and Pro")

	// Users of the plan: one within its limits, one with 3 clusters, one
	// with a cluster of 4 nodes.
	q := queries.New(pool)
	for i, use := range []struct{ clusters, nodes int }{{1, 1}, {3, 0}, {1, 4}} {
		u := person(t, pool, fmt.Sprintf("user%d@example.com", i), "user")
		_, err := pool.Exec(ctx, `UPDATE subscriptions SET plan_id = $1 WHERE org_id = (SELECT id FROM organizations WHERE personal_of = $2)`, p.ID, u)
		require.NoError(t, err)
		for c := range use.clusters {
			var cid int64
			require.NoError(t, pool.QueryRow(ctx, `INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
				VALUES ($1, $2, $3, 'v1.34.0', 'nodeport', 'ready') RETURNING id`, u, fmt.Sprintf("c%d", c), fmt.Sprintf("s-%d-%d", u, c)).Scan(&cid))
			if c == 0 {
				_, err := pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready) SELECT $1, 'n' || i, true FROM generate_series(1, $2::int) i`, cid, use.nodes)
				require.NoError(t, err)
			}
		}
	}
	lower := pro()
	lower.MaxClusters, lower.MaxNodesPerCluster = 2, 3
	p, over, err := svc.UpdatePlan(ctx, p.ID, lower, admin)
	require.NoError(t, err)
	require.Equal(t, int64(2), over, "two users over the new limits")
	require.Equal(t, int32(2), p.MaxClusters)
	_, over, err = svc.UpdatePlan(ctx, p.ID, lower, admin)
	require.NoError(t, err)
	require.Zero(t, over, "no change: nothing counted, nothing audited")
	_, _, err = svc.UpdatePlan(ctx, 999999, lower, admin)
	require.ErrorIs(t, err, billing.ErrPlanNotFound)

	// The default plan: cannot be archived; another becomes it, alone.
	free := plans[0]
	require.True(t, free.IsDefault)
	_, err = svc.SetPlanArchived(ctx, free.ID, true, admin)
	require.ErrorIs(t, err, billing.ErrPlanDefault)
	archived, err := svc.SetPlanArchived(ctx, p.ID, true, admin)
	require.NoError(t, err)
	require.True(t, archived.ArchivedAt.Valid)
	_, err = svc.MakeDefault(ctx, p.ID, admin)
	require.ErrorIs(t, err, billing.ErrPlanArchived)
	_, err = svc.SetPlanArchived(ctx, p.ID, false, admin)
	require.NoError(t, err)
	_, err = svc.MakeDefault(ctx, p.ID, admin)
	require.NoError(t, err)
	var defaults int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM plans WHERE is_default`).Scan(&defaults))
	require.Equal(t, 1, defaults)
	personal, err := q.OrgPersonal(ctx, pgtype.Int8{Int64: admin.UserID, Valid: true})
	require.NoError(t, err)
	got, err := q.PlanForOrg(ctx, personal.ID)
	require.NoError(t, err)
	require.Equal(t, p.ID, got.ID, "an organization on no plan is on the default one")

	var actions []string
	rows, err := pool.Query(ctx, `SELECT action FROM audit_events WHERE target_type = 'plan' ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var a string
		require.NoError(t, rows.Scan(&a))
		actions = append(actions, a)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"admin.plan_create", "admin.plan_update", "admin.plan_archive", "admin.plan_unarchive", "admin.plan_default"}, actions)

	// Not an admin: refused.
	user := audit.Actor{UserID: person(t, pool, "someone@example.com", "user")}
	other := pro()
	other.Name = "Sneaky"
	_, err = svc.CreatePlan(ctx, other, user)
	require.ErrorIs(t, err, adminauth.ErrNotAdmin)
}

// TestPlanPrices: an empty price is a period not on sale, never a price of
// 0; a price of 0 is refused; a plan that costs nothing is said to be free
// (and then has no price); a plan with no price and not free is refused.
func TestPlanPrices(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	svc := &billing.Service{Pool: pool}
	admin := audit.Actor{UserID: person(t, pool, "admin@example.com", "admin")}

	for _, tc := range []struct {
		name            string
		monthly, yearly string
		free            bool
		errs            input.Errors
		wantMonthly     int64 // 0: not on sale
		wantYearly      int64
	}{
		{name: "both", monthly: "99", yearly: "990", wantMonthly: 9900, wantYearly: 99000},
		{name: "monthly only", monthly: "99", yearly: " ", wantMonthly: 9900},
		{name: "yearly only", yearly: "990", wantYearly: 99000},
		{name: "gift", free: true},
		{name: "zero", monthly: "99", yearly: "0", errs: input.Errors{billing.FieldPlanPriceYearly: "ErrPlanPriceZero"}},
		{name: "zero decimals", monthly: "0.00", errs: input.Errors{billing.FieldPlanPriceMonthly: "ErrPlanPriceZero"}},
		{name: "nothing", errs: input.Errors{billing.FieldPlanPriceMonthly: "ErrPlanPriceRequired"}},
		{name: "free with a price", free: true, yearly: "1", errs: input.Errors{billing.FieldPlanPriceYearly: "ErrPlanFreeHasPrice"}},
	} {
		in := pro()
		in.Name, in.PriceMonthly, in.PriceYearly, in.Free = tc.name, tc.monthly, tc.yearly, tc.free
		p, err := svc.CreatePlan(ctx, in, admin)
		if tc.errs != nil {
			var fe input.Errors
			require.ErrorAs(t, err, &fe, tc.name)
			require.Equal(t, tc.errs, fe, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.free, p.Free, tc.name)
		m, ok := billing.Price(p, billing.Monthly)
		require.Equal(t, tc.wantMonthly != 0, ok, tc.name)
		require.Equal(t, tc.wantMonthly, m.Minor, tc.name)
		y, ok := billing.Price(p, billing.Yearly)
		require.Equal(t, tc.wantYearly != 0, ok, tc.name)
		require.Equal(t, tc.wantYearly, y.Minor, tc.name)
	}

	// The database refuses a price of 0 whatever writes it.
	_, err := pool.Exec(ctx, `UPDATE plans SET price_yearly = 0 WHERE name = 'monthly only'`)
	require.ErrorContains(t, err, "plans_prices_above_zero")
	_, err = pool.Exec(ctx, `UPDATE plans SET price_yearly = 100 WHERE name = 'gift'`)
	require.ErrorContains(t, err, "plans_free_has_no_price")
}
