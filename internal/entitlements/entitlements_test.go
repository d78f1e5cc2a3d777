package entitlements_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/entitlements"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type testBundle struct {
	pool *pgxpool.Pool
	q    *queries.Queries
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := testenv.DB(t)
	return &testBundle{pool: pool, q: queries.New(pool)}
}

// user makes a verified account; the database puts it on the default plan.
func (b *testBundle) user(t *testing.T, email string) queries.User {
	t.Helper()
	u, err := b.q.UserCreate(context.Background(), queries.UserCreateParams{
		Email: email, Name: "Name of " + email, Role: "user",
		EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
	})
	require.NoError(t, err)
	return u
}

type limits struct {
	clusters, nodes, hostnames int32
	ingress                    bool
	backends                   []string
}

func (b *testBundle) plan(t *testing.T, name string, l limits) queries.Plan {
	t.Helper()
	p, err := b.q.PlanCreate(context.Background(), queries.PlanCreateParams{
		Name: name, NameZh: name, MaxClusters: l.clusters, MaxNodesPerCluster: l.nodes,
		MaxHostnamesPerCluster: l.hostnames, IngressAllowed: l.ingress, Currency: "USD",
		PriceMonthly: pgtype.Int8{Int64: 1000, Valid: true}, Public: true, Backends: l.backends,
	})
	require.NoError(t, err)
	return p
}

// subscribe puts u's personal organization on plan p.
func (b *testBundle) subscribe(t *testing.T, u queries.User, p queries.Plan) {
	t.Helper()
	b.subscribeOrg(t, personalOrg(t, b.pool, u.ID), p)
}

func (b *testBundle) subscribeOrg(t *testing.T, org int64, p queries.Plan) {
	t.Helper()
	_, err := b.q.SubscriptionSetPlan(context.Background(), queries.SubscriptionSetPlanParams{PlanID: p.ID, Status: "active", OrgID: org})
	require.NoError(t, err)
}

// cluster makes a live cluster of u with nodes recorded nodes and
// hostnames bound host names.
func (b *testBundle) cluster(t *testing.T, u queries.User, name string, nodes, hostnames int) queries.Cluster {
	t.Helper()
	ctx := context.Background()
	c, err := b.q.ClusterCreate(ctx, queries.ClusterCreateParams{
		OwnerID: u.ID, Name: name, Slug: fmt.Sprintf("%s-%d", name, u.ID),
		KubernetesVersion: "v1.34.0", PublicAccessMode: "nodeport",
	})
	require.NoError(t, err)
	for i := range nodes {
		require.NoError(t, b.q.NodeUpsert(ctx, queries.NodeUpsertParams{
			ClusterID: c.ID, Name: fmt.Sprintf("node-%d", i), Ready: true,
			Conditions: []byte("[]"), Addresses: []byte("[]"),
		}))
	}
	for i := range hostnames {
		_, err := b.q.HostnameCreate(ctx, queries.HostnameCreateParams{
			ClusterID: c.ID, Name: fmt.Sprintf("h%d.%s.example.com", i, c.Slug), Managed: false,
		})
		require.NoError(t, err)
	}
	return c
}

// requireLimit checks that err refuses the limit l of plan p, with the
// message ID and values the pages show.
func requireLimit(t *testing.T, err error, l entitlements.Limit, plan string, msgID string, max int32) {
	t.Helper()
	require.ErrorIs(t, err, entitlements.ErrLimit)
	var le *entitlements.LimitError
	require.True(t, errors.As(err, &le), "%T is not a LimitError", err)
	require.Equal(t, l, le.Limit)
	require.Equal(t, max, le.Max)
	require.Equal(t, plan, le.Plan)
	require.Equal(t, msgID, le.Error())
	require.Equal(t, map[string]any{"Plan": plan, "Max": max, "Path": "/billing"}, le.Data())
}

// TestForReadsTheSubscriptionsPlan: For reads the plan the user's
// subscription names: the default one for a new user, the new one after
// a change, and within the caller's transaction.
func TestForReadsTheSubscriptionsPlan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u := b.user(t, "ada@example.com")
	other := b.user(t, "grace@example.com")

	def, err := b.q.PlanDefault(ctx)
	require.NoError(t, err)
	ent, err := entitlements.For(ctx, b.q, personalOrg(t, b.pool, u.ID))
	require.NoError(t, err)
	require.Equal(t, def.ID, ent.Plan.ID)

	pro := b.plan(t, "Pro", limits{clusters: 10, nodes: 20, hostnames: 5, ingress: true})
	b.subscribe(t, u, pro)
	ent, err = entitlements.For(ctx, b.q, personalOrg(t, b.pool, u.ID))
	require.NoError(t, err)
	require.Equal(t, pro.ID, ent.Plan.ID)
	require.Equal(t, int32(10), ent.Plan.MaxClusters)

	// Another user's plan is theirs.
	ent, err = entitlements.For(ctx, b.q, personalOrg(t, b.pool, other.ID))
	require.NoError(t, err)
	require.Equal(t, def.ID, ent.Plan.ID)

	// In a transaction, For sees the transaction's own change.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	tq := queries.New(tx)
	_, err = tq.SubscriptionSetPlan(ctx, queries.SubscriptionSetPlanParams{PlanID: def.ID, Status: "cancelled", OrgID: personalOrg(t, b.pool, u.ID)})
	require.NoError(t, err)
	ent, err = entitlements.For(ctx, tq, personalOrg(t, b.pool, u.ID))
	require.NoError(t, err)
	require.Equal(t, def.ID, ent.Plan.ID)
	require.NoError(t, tx.Rollback(ctx))
	ent, err = entitlements.For(ctx, b.q, personalOrg(t, b.pool, u.ID))
	require.NoError(t, err)
	require.Equal(t, pro.ID, ent.Plan.ID)
}

// TestTeamOrganizationPlan: a team's organization has a subscription of
// its own from the moment it is made, on the default plan, whatever its
// maker's personal plan; its plan, and what its clusters use, are its
// own.
func TestTeamOrganizationPlan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u := b.user(t, "ada@example.com")
	pro := b.plan(t, "Pro", limits{clusters: 10, nodes: 20, hostnames: 5, ingress: true})
	b.subscribe(t, u, pro)
	team, err := b.q.OrgCreate(ctx, queries.OrgCreateParams{Name: "Team", CreatedBy: pgtype.Int8{Int64: u.ID, Valid: true}})
	require.NoError(t, err)

	def, err := b.q.PlanDefault(ctx)
	require.NoError(t, err)
	ent, err := entitlements.For(ctx, b.q, team.ID)
	require.NoError(t, err)
	require.Equal(t, def.ID, ent.Plan.ID, "a new team is on the default plan")

	small := b.plan(t, "Small", limits{clusters: 1, nodes: 2, hostnames: 1})
	b.subscribeOrg(t, team.ID, small)
	ent, err = entitlements.For(ctx, b.q, team.ID)
	require.NoError(t, err)
	require.Equal(t, small.ID, ent.Plan.ID)
	ent, err = entitlements.For(ctx, b.q, personalOrg(t, b.pool, u.ID))
	require.NoError(t, err)
	require.Equal(t, pro.ID, ent.Plan.ID, "the maker's personal plan is unchanged")

	// The maker's personal clusters do not count for the team.
	b.cluster(t, u, "personal", 2, 0)
	usage, err := b.q.BillingUsage(ctx, team.ID)
	require.NoError(t, err)
	require.Equal(t, queries.BillingUsageRow{}, usage)
}

// TestForUnknownOrganization: an organization that does not exist is an
// error naming it, not a plan allowing nothing.
func TestForUnknownOrganization(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := entitlements.For(context.Background(), b.q, 424242)
	require.ErrorIs(t, err, pgx.ErrNoRows)
	require.ErrorContains(t, err, "plan of organization 424242")
	require.NotErrorIs(t, err, entitlements.ErrLimit)
}

// TestCountedLimits: clusters, nodes and host names are allowed while the
// user has fewer than the plan's maximum, refused at and above it.
func TestCountedLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u := b.user(t, "ada@example.com")
	p := b.plan(t, "Small", limits{clusters: 2, nodes: 3, hostnames: 1})
	b.subscribe(t, u, p)
	ent, err := entitlements.For(ctx, b.q, personalOrg(t, b.pool, u.ID))
	require.NoError(t, err)

	tests := []struct {
		limit entitlements.Limit
		msgID string
		max   int32
		plan  string
		check func(int64) error
	}{
		{entitlements.Clusters, "ErrLimitClusters", 2, p.Name, ent.Cluster},
		{entitlements.Nodes, "ErrLimitNodes", 3, p.Name, ent.Node},
		{entitlements.Hostnames, "ErrLimitHostnames", 1, p.Name, ent.Hostname},
		// The join endpoint decides from its query's figures alone (it
		// only tells whether, so the plan is not named).
		{entitlements.Nodes, "ErrLimitNodes", 3, "", func(n int64) error { return entitlements.NodeLimit(n, p.MaxNodesPerCluster) }},
	}
	for _, tt := range tests {
		for have := int64(0); have <= int64(tt.max)+2; have++ {
			err := tt.check(have)
			if have < int64(tt.max) {
				require.NoError(t, err, "%s: %d of %d", tt.limit, have, tt.max)
				continue
			}
			requireLimit(t, err, tt.limit, tt.plan, tt.msgID, tt.max)
		}
	}
}

// TestZeroLimits: a plan allowing none of a thing refuses the first one.
func TestZeroLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u := b.user(t, "ada@example.com")
	p := b.plan(t, "Nothing", limits{})
	b.subscribe(t, u, p)
	ent, err := entitlements.For(ctx, b.q, personalOrg(t, b.pool, u.ID))
	require.NoError(t, err)

	requireLimit(t, ent.Cluster(0), entitlements.Clusters, p.Name, "ErrLimitClusters", 0)
	requireLimit(t, ent.Node(0), entitlements.Nodes, p.Name, "ErrLimitNodes", 0)
	requireLimit(t, ent.Hostname(0), entitlements.Hostnames, p.Name, "ErrLimitHostnames", 0)
	requireLimit(t, ent.Ingress(), entitlements.Ingress, p.Name, "ErrLimitIngress", 0)
	require.ErrorIs(t, entitlements.NodeLimit(0, 0), entitlements.ErrLimit)
}

// TestIngress: managed ingress is allowed by the plan's flag alone.
func TestIngress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	tests := []struct {
		name    string
		allowed bool
	}{
		{"with-ingress", true},
		{"without-ingress", false},
	}
	for _, tt := range tests {
		u := b.user(t, tt.name+"@example.com")
		p := b.plan(t, tt.name, limits{clusters: 5, nodes: 5, hostnames: 5, ingress: tt.allowed})
		b.subscribe(t, u, p)
		ent, err := entitlements.For(ctx, b.q, personalOrg(t, b.pool, u.ID))
		require.NoError(t, err)
		if tt.allowed {
			require.NoError(t, ent.Ingress(), tt.name)
		} else {
			requireLimit(t, ent.Ingress(), entitlements.Ingress, p.Name, "ErrLimitIngress", 0)
		}
	}
}

// TestBackends: a plan naming backends offers those, its first the
// default; a plan naming none offers the platform's default.
func TestBackends(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	tests := []struct {
		name     string
		backends []string
		want     []string
	}{
		{"none", nil, []string{"vcluster"}},
		{"one", []string{"kamaji"}, []string{"kamaji"}},
		{"two", []string{"kamaji", "vcluster"}, []string{"kamaji", "vcluster"}},
	}
	for _, tt := range tests {
		u := b.user(t, tt.name+"@example.com")
		b.subscribe(t, u, b.plan(t, tt.name, limits{clusters: 1, backends: tt.backends}))
		ent, err := entitlements.For(ctx, b.q, personalOrg(t, b.pool, u.ID))
		require.NoError(t, err)
		require.Equal(t, tt.want, ent.Backends("vcluster"), tt.name)
	}
}

// TestPlanBelowUsage: a user who already has more than a lower plan
// allows (a downgrade, an admin's change to the plan) keeps everything,
// and every path refuses one more, with the lower plan's figures; below
// its limits again, they are allowed.
func TestPlanBelowUsage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u := b.user(t, "ada@example.com")
	big := b.plan(t, "Big", limits{clusters: 10, nodes: 10, hostnames: 10, ingress: true})
	b.subscribe(t, u, big)
	busy := b.cluster(t, u, "busy", 4, 3)
	b.cluster(t, u, "quiet", 1, 0)
	b.cluster(t, u, "spare", 0, 0)

	usage, err := b.q.BillingUsage(ctx, personalOrg(t, b.pool, u.ID))
	require.NoError(t, err)
	require.Equal(t, queries.BillingUsageRow{Clusters: 3, MostNodes: 4, MostHostnames: 3}, usage)

	ent, err := entitlements.For(ctx, b.q, personalOrg(t, b.pool, u.ID))
	require.NoError(t, err)
	require.NoError(t, ent.Cluster(usage.Clusters))
	require.NoError(t, ent.Node(usage.MostNodes))
	require.NoError(t, ent.Hostname(usage.MostHostnames))
	require.NoError(t, ent.Ingress())

	small := b.plan(t, "Small", limits{clusters: 1, nodes: 2, hostnames: 1})
	tests := []struct {
		name   string
		plan   string // the plan in effect after the change
		change func(t *testing.T)
	}{
		{"downgrade", "Small", func(t *testing.T) { b.subscribe(t, u, small) }},
		{"admin lowers the plan", "Big, lowered", func(t *testing.T) {
			b.subscribe(t, u, big)
			_, err := b.q.PlanUpdate(ctx, queries.PlanUpdateParams{
				ID: big.ID, Name: "Big, lowered", NameZh: big.NameZh, MaxClusters: small.MaxClusters,
				MaxNodesPerCluster: small.MaxNodesPerCluster, MaxHostnamesPerCluster: small.MaxHostnamesPerCluster,
				IngressAllowed: small.IngressAllowed, Currency: big.Currency, PriceMonthly: big.PriceMonthly,
				Public: big.Public, SortOrder: big.SortOrder,
			})
			require.NoError(t, err)
		}},
	}
	for _, tt := range tests {
		tt.change(t)
		ent, err := entitlements.For(ctx, b.q, personalOrg(t, b.pool, u.ID))
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.plan, ent.Plan.Name, tt.name)

		// Counted the way the paths count.
		live, err := b.q.ClusterCountActiveByOrg(ctx, personalOrg(t, b.pool, u.ID))
		require.NoError(t, err)
		bound, err := b.q.HostnameCountByCluster(ctx, busy.ID)
		require.NoError(t, err)
		requireLimit(t, ent.Cluster(live), entitlements.Clusters, tt.plan, "ErrLimitClusters", 1)
		requireLimit(t, ent.Node(usage.MostNodes), entitlements.Nodes, tt.plan, "ErrLimitNodes", 2)
		requireLimit(t, ent.Hostname(bound), entitlements.Hostnames, tt.plan, "ErrLimitHostnames", 1)
		requireLimit(t, ent.Ingress(), entitlements.Ingress, tt.plan, "ErrLimitIngress", 0)
		require.ErrorIs(t, entitlements.NodeLimit(usage.MostNodes, ent.Plan.MaxNodesPerCluster), entitlements.ErrLimit, tt.name)

		// Nothing was taken away.
		after, err := b.q.BillingUsage(ctx, personalOrg(t, b.pool, u.ID))
		require.NoError(t, err)
		require.Equal(t, usage, after, tt.name)

		// A cluster with fewer nodes than the limit still takes one more.
		require.NoError(t, ent.Node(1), tt.name)
		require.NoError(t, ent.Hostname(0), tt.name)
	}
}

// personalOrg is the id of the user's personal organization.
func personalOrg(t *testing.T, db queries.DBTX, userID int64) int64 {
	t.Helper()
	a, err := orgs.PersonalActing(context.Background(), db, userID)
	require.NoError(t, err)
	return a.OrgID
}
