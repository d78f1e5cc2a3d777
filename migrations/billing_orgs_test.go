package migrations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestBillingOrgsMigration (059): subscriptions and orders as 058 kept
// them, per user, land in each user's personal organization: the paid
// plan and its period with them, every order with them; a team's
// organization made before gets the default plan, and every organization
// made after gets a subscription too. One pending order per organization:
// the same owner may have one in each. Migrated back, each user has their
// personal organization's subscription again and one pending order.
func TestBillingOrgsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := database.Connect(ctx, testenv.EmptyDBURL(t))
	require.NoError(t, err)
	defer pool.Close()
	require.NoError(t, migrations.UpTo(ctx, pool, 58))

	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	id := func(sql string, args ...any) int64 {
		t.Helper()
		var v int64
		require.NoError(t, pool.QueryRow(ctx, sql, args...).Scan(&v), sql)
		return v
	}
	pro := id(`INSERT INTO plans (name, max_clusters, max_nodes_per_cluster, currency, price_monthly) VALUES ('Pro', 10, 10, 'USD', 1000) RETURNING id`)
	def := id(`SELECT id FROM plans WHERE is_default`)
	ada := id(`INSERT INTO users (email, name) VALUES ('ada@example.com', 'Ada') RETURNING id`)
	bob := id(`INSERT INTO users (email, name) VALUES ('bob@example.com', 'Bob') RETURNING id`)
	exec(`UPDATE subscriptions SET plan_id = $2, period = 'month', period_anchor = '2026-01-31T10:00:00Z',
		current_period_start = '2026-01-31T10:00:00Z', current_period_end = '2026-02-28T10:00:00Z', period_amount = 1000
		WHERE user_id = $1`, ada, pro)
	for _, o := range []struct {
		user   int64
		status string
	}{{ada, "paid"}, {ada, "pending"}, {bob, "pending"}} {
		exec(`INSERT INTO orders (user_id, plan_id, period, kind, currency, amount, total, method, status, expires_at, paid_at)
			VALUES ($1, $2, 'month', 'new', 'USD', 1000, 1000, 'manual', $3, now() + interval '1 day',
			        CASE WHEN $3 = 'paid' THEN now() END)`, o.user, pro, o.status)
	}
	team := id(`INSERT INTO organizations (name, created_by) VALUES ('Team', $1) RETURNING id`, ada)
	exec(`INSERT INTO organization_members (org_id, user_id, role) VALUES ($1, $2, 'owner')`, team, ada)

	_, err = migrations.Up(ctx, pool)
	require.NoError(t, err)
	personal := func(user int64) int64 {
		t.Helper()
		return id(`SELECT id FROM organizations WHERE personal_of = $1`, user)
	}
	adaOrg, bobOrg := personal(ada), personal(bob)
	type sub struct {
		plan   int64
		period string
		end    string
	}
	subOf := func(org int64) sub {
		t.Helper()
		var s sub
		require.NoError(t, pool.QueryRow(ctx, `SELECT plan_id, coalesce(period, ''), coalesce(to_char(current_period_end AT TIME ZONE 'UTC', 'YYYY-MM-DD'), '')
			FROM subscriptions WHERE org_id = $1`, org).Scan(&s.plan, &s.period, &s.end))
		return s
	}
	require.Equal(t, sub{pro, "month", "2026-02-28"}, subOf(adaOrg), "Ada's paid plan, in her personal organization")
	require.Equal(t, sub{def, "", ""}, subOf(bobOrg))
	require.Equal(t, sub{def, "", ""}, subOf(team), "a team made before: the default plan")
	require.Zero(t, id(`SELECT count(*) FROM organizations o WHERE NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.org_id = o.id)`))
	require.Equal(t, int64(3), id(`SELECT count(*) FROM orders`))
	require.Zero(t, id(`SELECT count(*) FROM orders o JOIN organizations p ON p.personal_of = o.user_id WHERE o.org_id <> p.id`),
		"every order in its user's personal organization")

	// Made from now on: a subscription each, on the default plan.
	newTeam := id(`INSERT INTO organizations (name, created_by) VALUES ('New team', $1) RETURNING id`, bob)
	require.Equal(t, sub{def, "", ""}, subOf(newTeam))
	cy := id(`INSERT INTO users (email, name) VALUES ('cy@example.com', 'Cy') RETURNING id`)
	require.Equal(t, sub{def, "", ""}, subOf(personal(cy)))

	// One pending order per organization: Ada's second in her personal
	// one is refused, one for the team is not.
	order := `INSERT INTO orders (org_id, user_id, plan_id, period, kind, currency, amount, total, method, expires_at)
		VALUES ($1, $2, $3, 'month', 'new', 'USD', 1000, 1000, 'manual', now() + interval '1 day')`
	_, err = pool.Exec(ctx, order, adaOrg, ada, pro)
	require.ErrorContains(t, err, "orders_one_pending")
	exec(order, team, ada, pro)

	// Back to 058: the users' subscriptions are their personal
	// organizations', and Ada keeps one pending order, the newest.
	require.NoError(t, migrations.UpTo(ctx, pool, 58))
	var plan int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT plan_id FROM subscriptions WHERE user_id = $1`, ada).Scan(&plan))
	require.Equal(t, pro, plan)
	require.NoError(t, pool.QueryRow(ctx, `SELECT plan_id FROM org_plans WHERE org_id = $1`, adaOrg).Scan(&plan))
	require.Equal(t, pro, plan)
	require.Equal(t, int64(1), id(`SELECT count(*) FROM orders WHERE user_id = $1 AND status = 'pending'`, ada))
	require.Equal(t, int64(3), id(`SELECT count(*) FROM subscriptions`), "one per user, the teams' gone")
	_, err = migrations.Up(ctx, pool)
	require.NoError(t, err, "and up again")
}
