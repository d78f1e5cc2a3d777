package jobs_test

import (
	"context"
	"fmt"
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
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestNodeQuotaSyncOnReady: the reconcile job that makes a cluster ready
// switches its node quota on, as the platform (a new key, an audit event
// by the system, a sync of its webhook, its periodic re-sync scheduled),
// and the sync writes the webhook configuration into the control plane.
// A quota on already keeps its key and gets a sync (a recreated control
// plane gets the configuration back); one an owner switched off, when
// owners could, is switched on again with a new key.
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
	switchedOn := func(c queries.Cluster) int {
		t.Helper()
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM audit_events
			WHERE action = 'cluster.node_quota' AND target_id = $1 AND actor_id IS NULL AND actor_email = 'system'
			  AND (details->>'enabled')::boolean`, fmt.Sprint(c.ID)).Scan(&n))
		return n
	}

	fresh := b.create(t, "quota-new")
	on := b.create(t, "quota-on")
	switchQuota(on, true)
	onKey := b.cluster(t, on.ID).NodeQuotaSecret
	was := b.create(t, "quota-was-on")
	switchQuota(was, true)
	switchQuota(was, false)
	wasKey := b.cluster(t, was.ID).NodeQuotaSecret
	for _, c := range []queries.Cluster{fresh, on, was} {
		bringUp(c)
		require.True(t, b.cluster(t, c.ID).NodeQuotaEnabled, c.Name)
		require.Len(t, syncs(c), 1, c.Name)
	}
	require.NotEmpty(t, b.cluster(t, fresh.ID).NodeQuotaSecret)
	require.Equal(t, 1, switchedOn(fresh))
	require.Equal(t, onKey, b.cluster(t, on.ID).NodeQuotaSecret, "a quota on keeps its key")
	require.Zero(t, switchedOn(on))
	require.NotEqual(t, wasKey, b.cluster(t, was.ID).NodeQuotaSecret, "switched on again with a new key")
	require.Equal(t, 1, switchedOn(was))
	check, err := q.ClusterCheckGet(ctx, queries.ClusterCheckGetParams{ClusterID: fresh.ID, Kind: string(checks.NodeQuotaSync)})
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(nodequota.SyncInterval), check.DueAt.Time, time.Minute, "re-synced periodically")

	// Ready again after an update: nothing to switch, the same key.
	key := b.cluster(t, fresh.ID).NodeQuotaSecret
	_, err = b.svc.Update(ctx, actingAs(t, b.svc.Pool, b.owner.ID), fresh.ID, clusters.Input{KubernetesVersion: "v1.33.4", PublicAccessMode: "nodeport"}, audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	res, err := b.work(t, ctx, w, fresh.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, key, b.cluster(t, fresh.ID).NodeQuotaSecret)
	require.Equal(t, 1, switchedOn(fresh))
	require.Len(t, syncs(fresh), 2, "synced again when ready again")

	job, err := b.svc.River.JobGet(ctx, syncs(fresh)[0])
	require.NoError(t, err)
	sync := b.nodeQuotaSyncWorker(t)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	res, err = sync.WorkJob(ctx, t, tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	cfg, err := virt.Client(t).AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, nodequota.WebhookName, metav1.GetOptions{})
	require.NoError(t, err)
	sealed, err := b.box.Open(key)
	require.NoError(t, err)
	require.Equal(t, nodequota.WebhookURL("https://kubebyon.test", fresh.ID, string(sealed)), *cfg.Webhooks[0].ClientConfig.URL)
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
	_, err := checks.MakeAllDue(context.Background(), queries.New(b.pool), checks.NodeQuotaSync)
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
	q := queries.New(b.pool)
	w := b.worker(t, time.Minute)
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

	on := bringUp(b.create(t, "quota-on"))
	// Ready from before the platform switched quotas on: no quota yet.
	off := b.create(t, "quota-off")
	_, err := q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: off.ID, Endpoint: "quota-off.clusters.test", Generation: off.Generation})
	require.NoError(t, err)
	// Switched on, then not ready (as while it is updated).
	notReady := b.create(t, "quota-pending")
	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		c, err := queries.New(tx).ClusterLock(ctx, notReady.ID)
		if err != nil {
			return err
		}
		switched, err := nodequota.EnableTx(ctx, tx, b.svc.River, b.box, c)
		require.True(t, switched)
		return err
	}))
	require.Equal(t, 1, b.workNodeQuotaSyncs(t, on.ID), "a node quota sync was queued")
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
	_, err = q.ClusterRequestDelete(ctx, on.ID)
	require.NoError(t, err)
	b.runNodeQuotaChecks(t)
	require.Empty(t, b.queuedNodeQuotaSyncs(t, on.ID, false))
	_, err = b.svc.River.Insert(ctx, nodequota.SyncArgs{ClusterID: on.ID}, nil)
	require.NoError(t, err)
	require.Equal(t, 1, b.workNodeQuotaSyncs(t, on.ID))
	_, err = hooks.Get(ctx, nodequota.WebhookName, metav1.GetOptions{})
	require.NoError(t, err)
}

// cluster is a cluster's row.
func (b *testBundle) cluster(t *testing.T, id int64) queries.Cluster {
	t.Helper()
	c, err := queries.New(b.pool).ClusterGetByID(context.Background(), id)
	require.NoError(t, err)
	return c
}

// TestNodeQuotaRewriteOnStart: the job the workers run when they start,
// and daily, makes every scheduled quota re-sync due now (a new base URL
// or CA bundle reaches every cluster at once) and leaves idle ones idle;
// then it switches the quota on, batch by batch, in every ready cluster
// without it, as the platform: each its own key, an audit event by the
// system, its sync queued, its re-sync scheduled. Clusters not ready, or
// being deleted, are left alone, and a second run changes nothing.
func TestNodeQuotaRewriteOnStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	box, err := testBox()
	require.NoError(t, err)

	scheduled := b.readyCluster(t, "quota-later")
	_, err = q.ClusterSetNodeQuota(ctx, queries.ClusterSetNodeQuotaParams{ID: scheduled.ID, Enabled: true, SealedSecret: box.Seal([]byte("kept"))})
	require.NoError(t, err)
	b.schedule(t, scheduled.ID, checks.NodeQuotaSync, time.Now().Add(nodequota.SyncInterval))
	scheduledKey := b.cluster(t, scheduled.ID).NodeQuotaSecret
	// Its quota checks idle, and not ready (failed): left as it is.
	idle := b.readyCluster(t, "quota-idle")
	require.NoError(t, q.ClusterMarkFailed(ctx, queries.ClusterMarkFailedParams{ID: idle.ID, StatusMessage: "broken"}))
	b.schedule(t, idle.ID, checks.NodeQuotaSync, time.Now())
	require.NoError(t, q.ClusterCheckIdle(ctx, queries.ClusterCheckIdleParams{ClusterID: idle.ID, Kind: string(checks.NodeQuotaSync)}))
	deleting := b.readyCluster(t, "quota-deleting")
	_, err = q.ClusterRequestDelete(ctx, deleting.ID)
	require.NoError(t, err)
	// More than a batch of ready clusters without the quota.
	var missing []queries.Cluster
	for i := range 105 {
		missing = append(missing, b.readyCluster(t, fmt.Sprintf("quota-missing-%d", i)))
	}

	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.NodeQuotaRewriteWorker{Pool: b.pool, Box: box, Logger: b.logger})
	rewrite := func() {
		t.Helper()
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck // the job row only
		res, err := w.Work(ctx, t, tx, nodequota.RewriteArgs{}, nil)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	}
	switchedOn := func() int {
		t.Helper()
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM audit_events
			WHERE action = 'cluster.node_quota' AND actor_id IS NULL AND actor_email = 'system'`).Scan(&n))
		return n
	}
	rewrite()

	require.WithinDuration(t, time.Now(), b.check(t, scheduled.ID, checks.NodeQuotaSync).DueAt.Time, 5*time.Second, "due now")
	require.Equal(t, scheduledKey, b.cluster(t, scheduled.ID).NodeQuotaSecret)
	require.False(t, b.check(t, idle.ID, checks.NodeQuotaSync).DueAt.Valid, "idle stays idle")
	require.False(t, b.cluster(t, idle.ID).NodeQuotaEnabled)
	require.False(t, b.cluster(t, deleting.ID).NodeQuotaEnabled)
	keys := map[string]bool{}
	for _, c := range missing {
		after := b.cluster(t, c.ID)
		require.True(t, after.NodeQuotaEnabled, c.Name)
		keys[after.NodeQuotaSecret] = true
		require.WithinDuration(t, time.Now().Add(nodequota.SyncInterval), b.check(t, c.ID, checks.NodeQuotaSync).DueAt.Time, time.Minute)
	}
	require.Len(t, keys, len(missing), "each its own key")
	synced := b.queued(t, "node_quota_sync")
	require.Len(t, synced, len(missing))
	require.Equal(t, missing[0].ID, synced[0])
	require.Equal(t, missing[len(missing)-1].ID, synced[len(synced)-1])
	require.Equal(t, len(missing), switchedOn())

	rewrite()
	require.Len(t, b.queued(t, "node_quota_sync"), len(missing))
	require.Equal(t, len(missing), switchedOn())
}
