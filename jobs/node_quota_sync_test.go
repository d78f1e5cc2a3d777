package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestNodeQuotaSyncOnReady: the reconcile job that makes a cluster ready
// queues a sync of its node quota's webhook when the quota is on, or was
// on (to remove the configuration), and not otherwise; the sync writes the
// configuration in the control plane.
func TestNodeQuotaSyncOnReady(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	w := b.worker(t, time.Minute)
	// One control plane serves all three: only the first's sync is worked.
	virt := testenv.NewKube(t)
	switchQuota := func(c queries.Cluster, enabled bool) {
		t.Helper()
		sealed := ""
		if enabled {
			sealed = b.box.Seal([]byte("key of " + c.Name))
		}
		_, err := q.ClusterSetNodeQuota(ctx, queries.ClusterSetNodeQuotaParams{ID: c.ID, Enabled: enabled, SealedSecret: sealed})
		require.NoError(t, err)
	}
	bringUp := func(c queries.Cluster) {
		t.Helper()
		res, err := b.work(t, ctx, w, c.ID)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
		b.playControlPlane(t, c, virt)
		res, err = b.work(t, ctx, w, c.ID)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.Equal(t, "ready", b.cluster(t, c.ID).Status)
	}
	syncs := func(c queries.Cluster) []int64 {
		t.Helper()
		rows, err := b.pool.Query(ctx, `SELECT id FROM river_job WHERE kind = 'node_quota_sync' AND (args->>'cluster_id')::bigint = $1`, c.ID)
		require.NoError(t, err)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		return ids
	}

	on := b.create(t, "quota-on")
	switchQuota(on, true)
	off := b.create(t, "quota-off")
	was := b.create(t, "quota-was-on")
	switchQuota(was, true)
	switchQuota(was, false)
	for _, c := range []queries.Cluster{on, off, was} {
		bringUp(c)
	}
	require.Len(t, syncs(on), 1)
	require.Empty(t, syncs(off))
	require.Len(t, syncs(was), 1)

	job, err := b.svc.River.JobGet(ctx, syncs(on)[0])
	require.NoError(t, err)
	sync := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.NodeQuotaSyncWorker{
		Pool: b.pool, Logger: b.logger, Box: b.box, VirtualConfig: b.svc.VirtualConfig, BaseURL: "https://kubebyon.test",
	})
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	res, err := sync.WorkJob(ctx, t, tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	cfg, err := virt.Client(t).AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, nodequota.WebhookName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, *cfg.Webhooks[0].ClientConfig.URL, "https://kubebyon.test/webhooks/node-quota/")
}
