package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/nodequota"
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

// runNodeQuotaSyncAll runs the periodic node_quota_sync_all job on the
// test's River client, which works the default queue, to its end.
func (b *testBundle) runNodeQuotaSyncAll(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	res, err := b.river.Insert(ctx, nodequota.SyncAllArgs{}, nil)
	require.NoError(t, err)
	var state rivertype.JobState
	require.Eventually(t, func() bool {
		job, err := b.river.JobGet(ctx, res.Job.ID)
		require.NoError(t, err)
		state = job.State
		return state == rivertype.JobStateCompleted
	}, 15*time.Second, 50*time.Millisecond, "node_quota_sync_all ended %s", state)
}

// TestNodeQuotaPeriodicSync: the periodic job queues a sync for each ready
// cluster with the quota on, one at a time per cluster, and the sync puts
// back a webhook configuration someone deleted.
func TestNodeQuotaPeriodicSync(t *testing.T) {
	t.Parallel()
	b := setup(t, withTLS)
	ctx := context.Background()
	c, _ := b.signedUpUser(t, "quota-resync")
	on, virt := b.readyVirtualCluster(t, c, "quota-on")
	off := b.newCluster(t, c, "quota-off")
	b.markReady(t, off)
	notReady := b.newCluster(t, c, "quota-pending")
	for _, cl := range []queries.Cluster{on, notReady} {
		page := fmt.Sprintf("/clusters/%d/nodes", cl.ID)
		resp := c.post(page, fmt.Sprintf("/clusters/%d/node-quota", cl.ID), url.Values{"enabled": {"on"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	}
	b.syncNodeQuota(t, on.ID)
	hooks := virt.Client(t).AdmissionregistrationV1().ValidatingWebhookConfigurations()
	written, err := hooks.Get(ctx, nodequota.WebhookName, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, hooks.Delete(ctx, nodequota.WebhookName, metav1.DeleteOptions{}))

	// Twice, as periods would: still one sync queued, and only for the
	// ready cluster with the quota on.
	b.runNodeQuotaSyncAll(t)
	b.runNodeQuotaSyncAll(t)
	require.Len(t, b.queuedNodeQuotaSyncs(t, on.ID, true), 1)
	require.Empty(t, b.queuedNodeQuotaSyncs(t, off.ID, false))
	require.Empty(t, b.queuedNodeQuotaSyncs(t, notReady.ID, true))

	require.Equal(t, 1, b.workNodeQuotaSyncs(t, on.ID))
	restored, err := hooks.Get(ctx, nodequota.WebhookName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, written.Webhooks, restored.Webhooks)
	// The switch's sync of the cluster that is not ready finishes without
	// reaching for a control plane it has not got.
	require.Equal(t, 1, b.workNodeQuotaSyncs(t, notReady.ID))

	// A finished sync does not hold the next period's back.
	b.runNodeQuotaSyncAll(t)
	require.Equal(t, 1, b.workNodeQuotaSyncs(t, on.ID))

	// A cluster being deleted is left alone: nothing is queued for it, and
	// a sync asked for anyway leaves its configuration as it is.
	_, err = queries.New(b.pool).ClusterRequestDelete(ctx, on.ID)
	require.NoError(t, err)
	b.runNodeQuotaSyncAll(t)
	require.Empty(t, b.queuedNodeQuotaSyncs(t, on.ID, false))
	_, err = b.river.Insert(ctx, nodequota.SyncArgs{ClusterID: on.ID}, nil)
	require.NoError(t, err)
	require.Equal(t, 1, b.workNodeQuotaSyncs(t, on.ID))
	_, err = hooks.Get(ctx, nodequota.WebhookName, metav1.GetOptions{})
	require.NoError(t, err)
}
