package adminoverview_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminoverview"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestRead checks every figure against a platform with a user disabled,
// clusters in every state, ready and not-ready nodes, River jobs in every
// state (a discarded one older than FailedWithin not counted), and the
// operator's checks in the audit log.
func TestRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	svc := &adminoverview.Service{Pool: pool}

	// A fresh platform: nothing yet.
	f, err := svc.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, adminoverview.Figures{}, f)

	exec(`INSERT INTO users (email, name, disabled_at) VALUES ('a@example.com', 'A', NULL), ('b@example.com', 'B', now()), ('c@example.com', 'C', NULL)`)
	statuses := []string{"ready", "ready", "pending", "provisioning", "updating", "deleting", "resuming", "failed", "suspended", "deleted"}
	for i, status := range statuses {
		exec(`INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
			SELECT id, $2, $3, 'v1.34.0', 'nodeport', $1 FROM users WHERE email = 'a@example.com'`, status, fmt.Sprintf("c%d-%s", i, status), fmt.Sprintf("figures-%d", i))
	}
	exec(`INSERT INTO nodes (cluster_id, name, ready, conditions, addresses)
		SELECT c.id, 'node-' || n, n <= 2, '[]', '[]' FROM clusters c CROSS JOIN generate_series(1, 3) n WHERE c.status = 'ready'`)
	for _, job := range []struct{ state, finalized string }{
		{"retryable", "NULL"}, {"retryable", "NULL"},
		{"discarded", "now() - interval '1 hour'"}, {"discarded", "now() - interval '2 days'"},
		{"available", "NULL"}, {"scheduled", "NULL"}, {"scheduled", "NULL"}, {"running", "NULL"},
		{"completed", "now()"}, {"cancelled", "now()"},
	} {
		exec(`INSERT INTO river_job (kind, args, state, finalized_at, queue, max_attempts, priority, attempt)
			VALUES ('figures', '{}', $1, `+job.finalized+`, 'default', 5, 1, 1)`, job.state)
	}
	exec(`INSERT INTO audit_events (action, details) VALUES
		('admin.mail_test', '{"sent": false}'), ('admin.mail_test', '{"sent": true}'),
		('admin.dns_check', '{"ok": false}'), ('admin.dns_check', '{"ok": true}')`)

	f, err = svc.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, adminoverview.Figures{
		AdminOverviewFiguresRow: queries.AdminOverviewFiguresRow{
			Users: 3, UsersDisabled: 1,
			Clusters: 9, ClustersReady: 2, ClustersInProgress: 5, ClustersFailed: 1, ClustersSuspended: 1,
			Nodes: 6, NodesReady: 4,
			MailTested: true, DnsChecked: true,
		},
		JobsRetrying: 2, JobsDiscarded: 1, JobsQueued: 3,
	}, f)

	// The latest DNS check is what counts.
	exec(`INSERT INTO audit_events (action, details) VALUES ('admin.dns_check', '{"ok": false}')`)
	f, err = svc.Read(ctx)
	require.NoError(t, err)
	require.False(t, f.DnsChecked)
}
