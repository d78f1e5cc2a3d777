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

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
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

// nodeQuotaSyncWorker is the node_quota_sync worker as the platform runs
// it. The apiserver takes only https webhook URLs: it never calls this
// one, as no Node is created.
func (b *reconcileBundle) nodeQuotaSyncWorker(t *testing.T) *rivertest.Worker[nodequota.SyncArgs, pgx.Tx] {
	return rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.NodeQuotaSyncWorker{
		Pool: b.pool, Logger: b.logger, Box: b.box, VirtualConfig: b.svc.VirtualConfig, BaseURL: "https://kubebyon.test",
	})
}

// queuedNodeQuotaSyncs are the ids of the cluster's node_quota_sync jobs
// waiting to be worked; onlyUnique keeps those of the periodic re-sync.
func (b *reconcileBundle) queuedNodeQuotaSyncs(t *testing.T, clusterID int64, onlyUnique bool) []int64 {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT id FROM river_job
		WHERE kind = 'node_quota_sync' AND state = 'available' AND (args->>'cluster_id')::bigint = $1
		  AND (NOT $2 OR unique_key IS NOT NULL) ORDER BY id`, clusterID, onlyUnique)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return ids
}

// workNodeQuotaSyncs works the cluster's queued node_quota_sync jobs, as
// the worker of the clusters queue would, and returns how many there were.
// Each outcome is committed, so a worked job no longer waits.
func (b *reconcileBundle) workNodeQuotaSyncs(t *testing.T, clusterID int64) int {
	t.Helper()
	ctx := context.Background()
	ids := b.queuedNodeQuotaSyncs(t, clusterID, false)
	w := b.nodeQuotaSyncWorker(t)
	for _, id := range ids {
		job, err := b.svc.River.JobGet(ctx, id)
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

// runNodeQuotaChecks lets a re-sync interval pass (every scheduled check
// of the quota comes due) and runs the dispatcher, as its periodic tick
// would then.
func (b *reconcileBundle) runNodeQuotaChecks(t *testing.T) {
	t.Helper()
	_, err := checks.MakeAllDue(context.Background(), queries.New(b.pool), nodequota.SyncCheck)
	require.NoError(t, err)
	dispatchChecks(t, b.pool)
}

// TestNodeQuotaPeriodicSync: each interval a re-sync is queued for each
// ready cluster with the quota on, one at a time per cluster, and the sync
// puts back a webhook configuration someone deleted.
func TestNodeQuotaPeriodicSync(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	ctx := context.Background()
	w := b.worker(t, time.Minute)
	// One control plane serves both ready clusters: the quota-off one's
	// sync is never worked.
	virt := testenv.NewKube(t)
	bringUp := func(c queries.Cluster) queries.Cluster {
		t.Helper()
		res, err := b.work(t, ctx, w, c.ID)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
		b.playControlPlane(t, c, virt)
		res, err = b.work(t, ctx, w, c.ID)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		c = b.cluster(t, c.ID)
		require.Equal(t, "ready", c.Status)
		return c
	}
	quotas := &nodequota.Service{Pool: b.pool, River: b.svc.River, Box: b.box}
	actor := audit.Actor{UserID: b.owner.ID}

	on := bringUp(b.create(t, "quota-on"))
	off := bringUp(b.create(t, "quota-off"))
	notReady := b.create(t, "quota-pending")
	for _, cl := range []queries.Cluster{on, notReady} {
		_, err := quotas.SetEnabled(ctx, cl, true, actor)
		require.NoError(t, err)
	}
	require.Positive(t, b.workNodeQuotaSyncs(t, on.ID), "a node quota sync was queued")
	hooks := virt.Client(t).AdmissionregistrationV1().ValidatingWebhookConfigurations()
	written, err := hooks.Get(ctx, nodequota.WebhookName, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, hooks.Delete(ctx, nodequota.WebhookName, metav1.DeleteOptions{}))

	// Twice, as periods would: still one sync queued, and only for the
	// ready cluster with the quota on.
	b.runNodeQuotaChecks(t)
	b.runNodeQuotaChecks(t)
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
	b.runNodeQuotaChecks(t)
	require.Equal(t, 1, b.workNodeQuotaSyncs(t, on.ID))

	// A cluster being deleted is left alone: nothing is queued for it, and
	// a sync asked for anyway leaves its configuration as it is.
	_, err = queries.New(b.pool).ClusterRequestDelete(ctx, on.ID)
	require.NoError(t, err)
	b.runNodeQuotaChecks(t)
	require.Empty(t, b.queuedNodeQuotaSyncs(t, on.ID, false))
	_, err = b.svc.River.Insert(ctx, nodequota.SyncArgs{ClusterID: on.ID}, nil)
	require.NoError(t, err)
	require.Equal(t, 1, b.workNodeQuotaSyncs(t, on.ID))
	_, err = hooks.Get(ctx, nodequota.WebhookName, metav1.GetOptions{})
	require.NoError(t, err)
}

// TestNodeQuotaRewriteOnStart: the job the workers run when they start
// makes every scheduled quota re-sync due now (a new base URL or CA bundle
// reaches every cluster at once) and leaves idle ones idle.
func TestNodeQuotaRewriteOnStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	scheduled, idle := b.readyCluster(t, "quota-later"), b.readyCluster(t, "quota-idle")
	b.schedule(t, scheduled.ID, nodequota.SyncCheck, time.Now().Add(nodequota.SyncInterval))
	b.schedule(t, idle.ID, nodequota.SyncCheck, time.Now())
	require.NoError(t, queries.New(b.pool).ClusterCheckIdle(ctx, queries.ClusterCheckIdleParams{ClusterID: idle.ID, Kind: string(nodequota.SyncCheck)}))

	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.NodeQuotaRewriteWorker{Pool: b.pool})
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // the job row only
	res, err := w.Work(ctx, t, tx, nodequota.RewriteArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.WithinDuration(t, time.Now(), b.check(t, scheduled.ID, nodequota.SyncCheck).DueAt.Time, 5*time.Second, "due now")
	require.False(t, b.check(t, idle.ID, nodequota.SyncCheck).DueAt.Valid, "idle stays idle")
}
