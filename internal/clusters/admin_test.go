package clusters_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAdminListUsesIndexes checks that among 10,000 clusters the
// admins' search finds its matches through the trigram
// indexes on lower(name) and lower(slug), not by reading every cluster:
// the plan of the query AdminList runs, as PostgreSQL plans it for the
// values given (a custom plan) and for any value (the generic plan a
// prepared statement may come to use).
func TestAdminListUsesIndexes(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	var owner int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO users (email, name) VALUES ('owner@example.com', 'Owner') RETURNING id`).Scan(&owner))
	_, err := pool.Exec(ctx, `INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		SELECT $1, 'cluster-' || i, 'cluster-' || i || '-abcdef', 'v1.34.0', 'nodeport', 'ready' FROM generate_series(1, 10000) i`, owner)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		VALUES ($1, 'payments', 'payments-zq9x8w', 'v1.34.0', 'nodeport', 'ready')`, owner)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "ANALYZE clusters")
	require.NoError(t, err)

	cfg := pool.Config().Copy()
	var sent queryCatcher
	cfg.ConnConfig.Tracer = &sent
	traced, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(traced.Close)
	p, err := (&clusters.Service{Pool: traced}).AdminList(ctx, clusters.AdminFilter{Search: "ZQ9X"}, 0, 0)
	require.NoError(t, err)
	require.Len(t, p.Clusters, 1)
	require.Equal(t, "payments", p.Clusters[0].Name)
	require.Contains(t, sent.sql, "LIKE", "the list query was caught")

	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explain(t, pool, sent, mode)
		require.Contains(t, plan, "clusters_name_trgm_idx", "%s:\n%s", mode, plan)
		require.Contains(t, plan, "clusters_slug_trgm_idx", "%s:\n%s", mode, plan)
		require.NotContains(t, plan, "Seq Scan on clusters", "%s:\n%s", mode, plan)
	}
	// The filters read the clusters newest first, by an index, and stop
	// at a page: no scan of every cluster, no sort.
	for _, f := range []clusters.AdminFilter{{}, {Status: clusters.StatusFailed}, {OwnerEmail: "owner@example.com"}} {
		_, err = (&clusters.Service{Pool: traced}).AdminList(ctx, f, 0, 0)
		require.NoError(t, err)
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explain(t, pool, sent, mode)
			require.NotContains(t, plan, "Seq Scan on clusters", "%+v %s:\n%s", f, mode, plan)
			require.NotContains(t, plan, "Sort", "%+v %s:\n%s", f, mode, plan)
		}
	}
}

// explain is the plan of the query q caught under plan_cache_mode mode:
// the query is prepared and its execution explained, as a prepared
// statement of the pool runs it (EXPLAIN of the query itself would plan
// it for its values whatever the mode).
func explain(t *testing.T, pool *pgxpool.Pool, q queryCatcher, mode string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, "SET plan_cache_mode = "+mode)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "PREPARE admin_list AS "+q.sql)
	require.NoError(t, err)
	// EXECUTE's arguments as literals: EXPLAIN takes no parameters.
	params := make([]string, len(q.args))
	for i, a := range q.args {
		if s, ok := a.(string); ok {
			params[i] = "'" + strings.ReplaceAll(s, "'", "''") + "'"
		} else {
			params[i] = fmt.Sprint(a)
		}
	}
	rows, err := conn.Query(ctx, "EXPLAIN EXECUTE admin_list("+strings.Join(params, ", ")+")")
	require.NoError(t, err)
	var plan strings.Builder
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan.WriteString(line + "\n")
	}
	require.NoError(t, rows.Err())
	_, err = conn.Exec(ctx, "DEALLOCATE admin_list; RESET plan_cache_mode")
	require.NoError(t, err)
	return plan.String()
}

// queryCatcher is a pgx tracer that keeps the last query sent and its
// arguments.
type queryCatcher struct {
	sql  string
	args []any
}

func (q *queryCatcher) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	q.sql, q.args = data.SQL, data.Args
	return ctx
}

func (*queryCatcher) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
