package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/queries"
)

// TestSuspendResume: an admin's suspension scales the control plane's
// StatefulSet (installed by the real chart on the real apiserver) to 0
// and keeps the replicas it asked for; the periodic checks leave the
// cluster alone; the resume scales it back to them and, once the
// control plane answers, makes the cluster ready and checked again.
// Each job run twice changes nothing more.
func TestSuspendResume(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	w := b.worker(t, time.Minute)
	c := b.create(t, "paused")
	res, err := b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	virt := testenv.NewKube(t)
	b.playControlPlane(t, c, virt)
	res, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, clusters.StatusReady, b.cluster(t, c.ID).Status)

	// An admin ran it with two replicas: the resume must give them back.
	sts := b.client.AppsV1().StatefulSets(vcluster.Namespace(c))
	scale, err := sts.GetScale(ctx, vcluster.ReleaseName(c), metav1.GetOptions{})
	require.NoError(t, err)
	scale.Spec.Replicas = 2
	_, err = sts.UpdateScale(ctx, vcluster.ReleaseName(c), scale, metav1.UpdateOptions{})
	require.NoError(t, err)
	replicas := func() int32 {
		t.Helper()
		s, err := sts.Get(ctx, vcluster.ReleaseName(c), metav1.GetOptions{})
		require.NoError(t, err)
		return *s.Spec.Replicas
	}

	admin, err := q.UserCreateUnverified(ctx, queries.UserCreateUnverifiedParams{Email: "admin@example.com", Name: "Admin"})
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, "UPDATE users SET role = 'admin' WHERE id = $1", admin.ID)
	require.NoError(t, err)
	actor := audit.Actor{UserID: admin.ID}
	c, err = b.svc.AdminSuspend(ctx, c.ID, c.Slug, actor)
	require.NoError(t, err)
	require.Equal(t, clusters.StatusSuspended, c.Status)
	_, err = b.svc.AdminSuspend(ctx, c.ID, c.Slug, actor)
	require.ErrorIs(t, err, clusters.ErrNotSuspendable, "a second request changes nothing")

	// The checks markReady scheduled are due; the dispatcher queues none
	// for the suspended cluster and leaves them idle.
	kinds := []checks.Kind{checks.NodeHealth, checks.JoinTokenSync, checks.MetricsScrape}
	for _, kind := range kinds {
		b.scheduleCheck(t, c.ID, kind, time.Now().Add(-time.Second))
	}
	dispatchChecks(t, b.pool)
	for _, kind := range kinds {
		ch, err := q.ClusterCheckGet(ctx, queries.ClusterCheckGetParams{ClusterID: c.ID, Kind: string(kind)})
		require.NoError(t, err)
		require.False(t, ch.DueAt.Valid, "%s idles while the cluster is suspended", kind)
		require.False(t, ch.UnreachableSince.Valid, "%s does not call it unreachable", kind)
	}
	require.Empty(t, b.queuedChecks(t, c.ID))

	for range 2 {
		res, err = b.work(t, ctx, w, c.ID)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.Zero(t, replicas(), "scaled to 0")
		kept := b.cluster(t, c.ID).SuspendedReplicas
		require.True(t, kept.Valid)
		require.EqualValues(t, 2, kept.Int32, "the replicas it had are kept, not the 0 read the second time")
		require.Equal(t, clusters.StatusSuspended, b.cluster(t, c.ID).Status)
	}
	require.Equal(t, []string{"AdminSuspended", "Suspended"}, b.reasons(t, c.ID)[len(b.reasons(t, c.ID))-2:], "the second run adds no event")

	// The StatefulSet controller (which the test apiserver does not run)
	// would have stopped the pods.
	s, err := sts.Get(ctx, vcluster.ReleaseName(c), metav1.GetOptions{})
	require.NoError(t, err)
	s.Status.Replicas, s.Status.ReadyReplicas = 0, 0
	_, err = sts.UpdateStatus(ctx, s, metav1.UpdateOptions{})
	require.NoError(t, err)

	c, err = b.svc.AdminResume(ctx, c.ID, actor)
	require.NoError(t, err)
	require.Equal(t, clusters.StatusResuming, c.Status)
	_, err = b.svc.AdminResume(ctx, c.ID, actor)
	require.ErrorIs(t, err, clusters.ErrNotSuspended)
	for range 2 {
		res, err = b.work(t, ctx, w, c.ID)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "waits for the control plane")
		require.EqualValues(t, 2, replicas(), "scaled back to the replicas it had")
		require.Equal(t, clusters.StatusResuming, b.cluster(t, c.ID).Status)
	}
	b.playControlPlane(t, c, virt)
	res, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	c = b.cluster(t, c.ID)
	require.Equal(t, clusters.StatusReady, c.Status)
	require.False(t, c.SuspendedAt.Valid)
	require.Equal(t, "Ready", b.reasons(t, c.ID)[len(b.reasons(t, c.ID))-1])
	res, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.EqualValues(t, 2, replicas())

	// Checked again: its checks are due, and the dispatcher queues them.
	for _, kind := range kinds {
		ch, err := q.ClusterCheckGet(ctx, queries.ClusterCheckGetParams{ClusterID: c.ID, Kind: string(kind)})
		require.NoError(t, err)
		require.True(t, ch.DueAt.Valid && !ch.DueAt.Time.After(time.Now()), "%s is due again", kind)
	}
	dispatchChecks(t, b.pool)
	require.ElementsMatch(t, []string{"node_health", "join_token_sync", "metrics_scrape"}, b.queuedChecks(t, c.ID))
}

// TestSuspendedClusterDeleted: a suspended cluster deleted by its owner
// is removed as any other, not held by the suspension.
func TestSuspendedClusterDeleted(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	ctx := context.Background()
	w := b.worker(t, time.Minute)
	c := b.create(t, "gone")
	_, err := b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	b.playControlPlane(t, c, testenv.NewKube(t))
	_, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	admin, err := queries.New(b.pool).UserCreateUnverified(ctx, queries.UserCreateUnverifiedParams{Email: "admin@example.com", Name: "Admin"})
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, "UPDATE users SET role = 'admin' WHERE id = $1", admin.ID)
	require.NoError(t, err)
	_, err = b.svc.AdminSuspend(ctx, c.ID, c.Slug, audit.Actor{UserID: admin.ID})
	require.NoError(t, err)
	_, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)

	_, err = b.svc.Update(ctx, actingAs(t, b.svc.Pool, b.owner.ID), c.ID, clusters.Input{Description: "changed", KubernetesVersion: c.KubernetesVersion, PublicAccessMode: c.PublicAccessMode}, audit.Actor{UserID: b.owner.ID})
	require.ErrorIs(t, err, clusters.ErrSuspended, "the owner cannot change it")
	_, err = b.svc.Delete(ctx, actingAs(t, b.svc.Pool, b.owner.ID), c.ID, "gone", audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err, "but can delete it")
	res, err := b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "waits for the namespace")
	require.Equal(t, clusters.StatusDeleting, b.cluster(t, c.ID).Status)
	b.finalizeNamespace(t, c)
	_, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, clusters.StatusDeleted, b.cluster(t, c.ID).Status)
}

// scheduleCheck makes the cluster's check of kind due at at.
func (b *reconcileBundle) scheduleCheck(t *testing.T, clusterID int64, kind checks.Kind, at time.Time) {
	t.Helper()
	require.NoError(t, checks.Schedule(context.Background(), queries.New(b.pool), clusterID, kind, at))
}

// queuedChecks are the kinds of the jobs of the checks that skip clusters
// not ready (node health, join token sync, metrics scrape) waiting for
// the cluster.
func (b *reconcileBundle) queuedChecks(t *testing.T, clusterID int64) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT kind FROM river_job
		WHERE kind IN ('node_health', 'join_token_sync', 'metrics_scrape') AND state IN ('available', 'scheduled')
		  AND (args->>'cluster_id')::bigint = $1`, clusterID)
	require.NoError(t, err)
	var kinds []string
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		kinds = append(kinds, k)
	}
	require.NoError(t, rows.Err())
	return kinds
}
