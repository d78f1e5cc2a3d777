package handlers_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// nodeQuotaSyncWorker is the node_quota_sync worker as the platform runs
// it. The apiserver takes only https webhook URLs: a test served over
// http gets one it never calls, as it creates no Nodes.
func (b *testBundle) nodeQuotaSyncWorker() *jobs.NodeQuotaSyncWorker {
	base, ca := b.server.URL, []byte(nil)
	if b.server.TLS != nil {
		ca = b.serverCA()
	} else {
		base = "https://" + strings.TrimPrefix(base, "http://")
	}
	return &jobs.NodeQuotaSyncWorker{
		Pool: b.pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Box: b.box,
		VirtualConfig: (&clusters.Service{Pool: b.pool, Box: b.box, KubeconfigPath: b.hostKubeconfig}).VirtualConfig,
		BaseURL:       base, CABundle: ca,
	}
}

// rewriteNodeQuotas runs the job the workers run when they start, and
// daily: it switches the node quota on in the ready clusters without it,
// queuing their syncs.
func (b *testBundle) rewriteNodeQuotas(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.NodeQuotaRewriteWorker{
		Pool: b.pool, Box: b.box, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // the job row only
	res, err := w.Work(ctx, t, tx, nodequota.RewriteArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
}

// quotaCluster is a ready cluster of c's on a virtual cluster whose node
// quota the platform switched on, with its webhook configuration written.
func (b *testBundle) quotaCluster(t *testing.T, c *client, name string) (queries.Cluster, *testenv.Kube) {
	t.Helper()
	cl, virt := b.readyVirtualCluster(t, c, name)
	b.rewriteNodeQuotas(t)
	b.syncNodeQuota(t, cl.ID)
	cl = b.cluster(t, cl.ID)
	require.True(t, cl.NodeQuotaEnabled)
	return cl, virt
}

// workNodeQuotaSyncs works the cluster's queued node_quota_sync jobs, as
// the worker of the clusters queue would, and returns how many there were.
func (b *testBundle) workNodeQuotaSyncs(t *testing.T, clusterID int64) int {
	t.Helper()
	ctx := context.Background()
	ids := b.queuedNodeQuotaSyncs(t, clusterID, false)
	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, b.nodeQuotaSyncWorker())
	for _, id := range ids {
		job, err := b.river.JobGet(ctx, id)
		require.NoError(t, err)
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		res, err := w.WorkJob(ctx, t, tx, job)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.NoError(t, tx.Commit(ctx))
	}
	return len(ids)
}

// queuedNodeQuotaSyncs are the ids of the cluster's node_quota_sync jobs
// waiting to be worked; onlyUnique keeps those of the periodic re-sync.
func (b *testBundle) queuedNodeQuotaSyncs(t *testing.T, clusterID int64, onlyUnique bool) []int64 {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT id FROM river_job
		WHERE kind = 'node_quota_sync' AND state = 'available' AND (args->>'cluster_id')::bigint = $1
		  AND (NOT $2 OR unique_key IS NOT NULL) ORDER BY id`, clusterID, onlyUnique)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return ids
}
