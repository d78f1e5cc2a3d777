package jobs_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// healthNode creates a Node whose Ready condition is ready since since.
func healthNode(t *testing.T, kc kubernetes.Interface, name string, ready corev1.ConditionStatus, since time.Time) {
	t.Helper()
	ctx := context.Background()
	n, err := kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		n, err = kc.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
		}}, metav1.CreateOptions{})
	}
	require.NoError(t, err)
	n.Status = corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(since),
		}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.9"}},
		NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.34.0"},
	}
	_, err = kc.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// TestNodeHealthWorker runs the node_health worker against a real virtual
// apiserver: it snapshots the nodes, tells the owner once (in-app, and an
// email queued) about a node NotReady past the threshold and once more
// when it recovers, forgets a node gone from the cluster, and deletes a
// node NotReady past the cluster's stale-node clean-up period with an
// audit event. A cluster it cannot reach keeps its last snapshot, and its
// check says since when it has been unreachable.
func TestNodeHealthWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	virt := testenv.NewKube(t)
	kc := virt.Client(t)
	box, err := secrets.New(bytes.Repeat([]byte{5}, 32))
	require.NoError(t, err)
	catalog, err := locale.New()
	require.NoError(t, err)
	cl := b.readyCluster(t, "health")
	unreachable := b.readyCluster(t, "gone")
	err = q.NodeUpsert(ctx, queries.NodeUpsertParams{ClusterID: unreachable.ID, Name: "kept", Ready: true, Conditions: []byte("[]"), Addresses: []byte("[]")})
	require.NoError(t, err)

	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.NodeHealthWorker{
		Pool: b.pool, Logger: b.logger, Box: box, Threshold: 5 * time.Minute,
		VirtualConfig: func(_ context.Context, c queries.Cluster) (*rest.Config, error) {
			if c.ID == unreachable.ID {
				return &rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, nil
			}
			return virt.Config, nil
		},
	})
	for _, c := range []queries.Cluster{cl, unreachable} {
		b.schedule(t, c.ID, checks.NodeHealth, time.Now())
	}
	// run checks both clusters, as the dispatcher would queue them.
	run := func() {
		t.Helper()
		for _, c := range []queries.Cluster{cl, unreachable} {
			tx, err := b.pool.Begin(ctx)
			require.NoError(t, err)
			res, err := w.Work(ctx, t, tx, nodes.HealthArgs{ClusterID: c.ID}, nil)
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobCompleted, res.EventKind, "an unreachable cluster is recorded, not retried by River")
			require.NoError(t, tx.Commit(ctx))
		}
	}
	told := func() []string {
		t.Helper()
		rows, err := q.NotificationListByUser(ctx, queries.NotificationListByUserParams{UserID: cl.OwnerID, RowLimit: 100})
		require.NoError(t, err)
		var out []string
		for i := len(rows) - 1; i >= 0; i-- {
			title, _ := notify.Word(catalog.For("en"), rows[i])
			out = append(out, title)
		}
		return out
	}
	emails := func() int {
		t.Helper()
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'email'").Scan(&n))
		return n
	}

	healthNode(t, kc, "worker-1", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	healthNode(t, kc, "worker-2", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	run()
	snap, err := q.NodeListByCluster(ctx, cl.ID)
	require.NoError(t, err)
	require.Len(t, snap, 2)
	require.True(t, snap[0].Ready)
	require.Equal(t, "v1.34.0", snap[0].KubeletVersion)
	require.Contains(t, string(snap[0].Addresses), "10.0.0.9")
	// All that the nodes page lists, so that it never asks the cluster.
	require.Equal(t, []string{"worker"}, snap[0].Roles)
	require.True(t, snap[0].NodeCreatedAt.Valid)
	require.False(t, snap[0].Unschedulable)
	require.Empty(t, told())
	kept, err := q.NodeListByCluster(ctx, unreachable.ID)
	require.NoError(t, err)
	require.Len(t, kept, 1, "the unreachable cluster keeps its last snapshot")
	require.True(t, b.check(t, unreachable.ID, checks.NodeHealth).UnreachableSince.Valid, "and says since when it is unreachable")
	checked := b.check(t, cl.ID, checks.NodeHealth)
	require.False(t, checked.UnreachableSince.Valid)
	require.WithinDuration(t, time.Now().Add(nodes.HealthInterval), checked.DueAt.Time, 5*time.Second, "checked again in an interval")

	// NotReady for an hour, past the threshold; worker-2 only just now.
	healthNode(t, kc, "worker-1", corev1.ConditionFalse, time.Now().Add(-time.Hour))
	healthNode(t, kc, "worker-2", corev1.ConditionFalse, time.Now())
	run()
	run()
	require.Equal(t, []string{"Node worker-1 of health is not ready"}, told(), "told once")
	require.Equal(t, 1, emails(), "and one email queued")

	// Ready again: told once more; worker-2 gone from the cluster is
	// forgotten.
	healthNode(t, kc, "worker-1", corev1.ConditionTrue, time.Now())
	require.NoError(t, kc.CoreV1().Nodes().Delete(ctx, "worker-2", metav1.DeleteOptions{}))
	run()
	run()
	require.Equal(t, []string{"Node worker-1 of health is not ready", "Node worker-1 of health is ready again"}, told())
	require.Equal(t, 2, emails())
	snap, err = q.NodeListByCluster(ctx, cl.ID)
	require.NoError(t, err)
	require.Len(t, snap, 1)
	require.Equal(t, "worker-1", snap[0].Name)
	// Cordoned in the cluster: recorded so.
	n, err := kc.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{})
	require.NoError(t, err)
	n.Spec.Unschedulable = true
	_, err = kc.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	run()
	snap, err = q.NodeListByCluster(ctx, cl.ID)
	require.NoError(t, err)
	require.True(t, snap[0].Unschedulable)

	// Stale-node clean-up after two hours: a node NotReady for three is
	// deleted from the cluster, with an audit event; one NotReady for an
	// hour stays.
	require.NoError(t, q.ClusterSetStaleNodeCleanup(ctx, queries.ClusterSetStaleNodeCleanupParams{ID: cl.ID, Hours: pgtype.Int4{Int32: 2, Valid: true}}))
	healthNode(t, kc, "stale", corev1.ConditionFalse, time.Now().Add(-3*time.Hour))
	healthNode(t, kc, "worker-1", corev1.ConditionFalse, time.Now().Add(-time.Hour))
	run()
	_, err = kc.CoreV1().Nodes().Get(ctx, "stale", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the stale node is deleted: %v", err)
	_, err = kc.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{})
	require.NoError(t, err)
	var audited int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM audit_events WHERE action = 'node.stale_delete' AND details->>'node' = 'stale'").Scan(&audited))
	require.Equal(t, 1, audited)
	snap, err = q.NodeListByCluster(ctx, cl.ID)
	require.NoError(t, err)
	require.Len(t, snap, 1, "the deleted node is not in the snapshot")
}
