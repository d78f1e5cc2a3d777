package clusters_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAdminListSearchUsesTrigramIndexes checks that among 10,000
// clusters the admins' search finds its matches through the trigram
// indexes on lower(name) and lower(slug), not by reading every cluster:
// the plan of the query AdminList runs, as PostgreSQL plans it for the
// values given (a custom plan) and for any value (the generic plan a
// prepared statement may come to use).
func TestAdminListSearchUsesTrigramIndexes(t *testing.T) {
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
		conn, err := pool.Acquire(ctx)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, "SET plan_cache_mode = "+mode)
		require.NoError(t, err)
		rows, err := conn.Query(ctx, "EXPLAIN "+sent.sql, sent.args...)
		require.NoError(t, err)
		var plan strings.Builder
		for rows.Next() {
			var line string
			require.NoError(t, rows.Scan(&line))
			plan.WriteString(line + "\n")
		}
		require.NoError(t, rows.Err())
		_, err = conn.Exec(ctx, "RESET plan_cache_mode")
		require.NoError(t, err)
		conn.Release()
		require.Contains(t, plan.String(), "clusters_name_trgm_idx", "%s:\n%s", mode, plan.String())
		require.Contains(t, plan.String(), "clusters_slug_trgm_idx", "%s:\n%s", mode, plan.String())
		require.NotContains(t, plan.String(), "Seq Scan on clusters", "%s:\n%s", mode, plan.String())
	}
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
