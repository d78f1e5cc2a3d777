package bench

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// Fleet is the size of the data set the issue measured with: 1,000
// users, 10,000 ready clusters, 100,000 nodes and 10,000 join tokens;
// and the events of each cluster's timeline.
type Fleet struct {
	Users, Clusters, NodesPerCluster, Tokens, EventsPerCluster int
}

// FullFleet is the data set of issue 10, with the ten or so events a
// cluster's creation leaves on its timeline.
var FullFleet = Fleet{Users: 1000, Clusters: 10000, NodesPerCluster: 10, Tokens: 10000, EventsPerCluster: 10}

// seedFleet fills the database with f: users on a plan that allows their
// clusters, ready clusters (each with a CA certificate of the size a real
// one has), a node snapshot per cluster, one join token in use per
// cluster (up to f.Tokens), events a minute apart on each cluster's
// timeline, and the clusters' checks as a running platform
// has them (node health and metrics scrapes due within a minute, join
// token sync due now).
func seedFleet(tb testing.TB, pool *pgxpool.Pool, f Fleet) {
	tb.Helper()
	ctx := context.Background()
	stmts := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO users (email, name, role, email_verified_at)
		  SELECT 'user' || i || '@fleet.test', 'User ' || i, 'user', now() FROM generate_series(1, $1::int) i`, []any{f.Users}},
		{`WITH p AS (INSERT INTO plans (name, max_clusters, max_nodes_per_cluster) VALUES ('fleet', 1000000, 1000) RETURNING id)
		  UPDATE subscriptions SET plan_id = (SELECT id FROM p)
		  WHERE org_id IN (SELECT o.id FROM organizations o JOIN users u ON u.id = o.personal_of WHERE u.email LIKE '%@fleet.test')`, nil},
		{`INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status, endpoint,
		      generation, observed_generation, ready_at, ca_cert)
		  SELECT u.id, 'c' || i, 'c' || i || '-fleet', 'v1.34.0', 'loadbalancer', 'ready', 'c' || i || '.fleet.test:443',
		      1, 1, now(), repeat('M', 1100)
		  FROM generate_series(1, $1::int) i
		  JOIN LATERAL (SELECT id FROM users WHERE email = 'user' || (1 + i % $2::int) || '@fleet.test') u ON true`, []any{f.Clusters, f.Users}},
		{`INSERT INTO nodes (cluster_id, name, ready, conditions, kubelet_version, addresses)
		  SELECT c.id, 'node-' || n, true, '[{"type":"Ready","status":"True"}]', 'v1.34.0', '[{"type":"InternalIP","address":"10.0.0.1"}]'
		  FROM clusters c CROSS JOIN generate_series(1, $1::int) n WHERE c.slug LIKE '%-fleet'`, []any{f.NodesPerCluster}},
		{`INSERT INTO cluster_events (cluster_id, level, reason, message, created_at)
		  SELECT c.id, 'info', 'Step' || e, 'The control plane moved on to step ' || e || ' of its installation.', now() - ($1::int - e) * interval '1 minute'
		  FROM clusters c CROSS JOIN generate_series(1, $1::int) e WHERE c.slug LIKE '%-fleet'`, []any{f.EventsPerCluster}},
		{`INSERT INTO join_tokens (cluster_id, token_id, token_hash, sealed_token, description)
		  SELECT id, substr(md5(id::text), 1, 6), md5('token' || id), 'x', 'rack'
		  FROM clusters WHERE slug LIKE '%-fleet' ORDER BY id LIMIT $1::int`, []any{f.Tokens}},
		{`INSERT INTO cluster_checks (cluster_id, kind, due_at)
		  SELECT id, 'node_health', now() + random() * interval '1 minute' FROM clusters WHERE slug LIKE '%-fleet'`, nil},
		{`INSERT INTO cluster_checks (cluster_id, kind, due_at)
		  SELECT DISTINCT cluster_id, 'join_token_sync', now() FROM join_tokens`, nil},
		{`INSERT INTO cluster_checks (cluster_id, kind, due_at)
		  SELECT id, 'metrics_scrape', now() + random() * interval '1 minute' FROM clusters WHERE slug LIKE '%-fleet'`, nil},
		{`ANALYZE`, nil},
	}
	for _, s := range stmts {
		_, err := pool.Exec(ctx, s.sql, s.args...)
		require.NoError(tb, err, s.sql)
	}
}
