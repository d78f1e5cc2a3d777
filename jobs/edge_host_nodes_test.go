package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestHostNodesRecorded checks that the host nodes job records the host
// cluster's nodes (as a real apiserver holds them) with their addresses
// and readiness, follows changes, and forgets nodes that are gone; that
// it follows LoadBalancer clusters' addresses; and that without a host
// cluster it does nothing.
func TestHostNodesRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	box, err := testBox()
	require.NoError(t, err)
	q := queries.New(pool)
	kubecfg := filepath.Join(t.TempDir(), "host.kubeconfig")
	w := &jobs.HostNodesWorker{Pool: pool, Box: box, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	tw := rivertest.NewWorker(t, riverpgxv5.New(pool), &river.Config{}, w)
	work := func() {
		t.Helper()
		// The job's row is the transaction's; what the worker records is
		// written through the pool.
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck
		res, err := tw.Work(ctx, t, tx, edge.HostNodesArgs{}, nil)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	}

	// No host cluster yet: nothing to record, and no error.
	work()
	rows, err := q.HostNodeList(ctx)
	require.NoError(t, err)
	require.Empty(t, rows)

	// Its own apiserver: the nodes made here are the host's only ones.
	host := testenv.NewKube(t)
	require.NoError(t, os.WriteFile(kubecfg, host.Kubeconfig(t), 0o600))
	w.KubeconfigPath = kubecfg
	client := host.Client(t)
	node := func(name, internal, external string, ready corev1.ConditionStatus) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: internal}}
		if external != "" {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: external})
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
		return n
	}
	for _, n := range []*corev1.Node{
		node("host-a", "10.0.0.1", "198.51.100.1", corev1.ConditionTrue),
		node("host-b", "10.0.0.2", "", corev1.ConditionFalse),
	} {
		created, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		require.NoError(t, err)
		created.Status = n.Status
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	work()
	rows, err = q.HostNodeList(ctx)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, []string{"host-a", "10.0.0.1", "198.51.100.1"}, []string{rows[0].Name, rows[0].InternalIp, rows[0].ExternalIp})
	require.True(t, rows[0].Ready)
	require.Equal(t, []string{"host-b", "10.0.0.2", ""}, []string{rows[1].Name, rows[1].InternalIp, rows[1].ExternalIp})
	require.False(t, rows[1].Ready)

	// host-b becomes Ready, host-a goes away.
	b, err := client.CoreV1().Nodes().Get(ctx, "host-b", metav1.GetOptions{})
	require.NoError(t, err)
	b.Status.Conditions[0].Status = corev1.ConditionTrue
	_, err = client.CoreV1().Nodes().UpdateStatus(ctx, b, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, client.CoreV1().Nodes().Delete(ctx, "host-a", metav1.DeleteOptions{}))
	work()
	ready, err := q.HostNodesReady(ctx)
	require.NoError(t, err)
	require.Len(t, ready, 1)
	require.Equal(t, "host-b", ready[0].Name)
	rows, err = q.HostNodeList(ctx)
	require.NoError(t, err)
	require.Len(t, rows, 1)

	// A LoadBalancer cluster's address that changes later is followed.
	u, err := q.UserCreate(ctx, queries.UserCreateParams{Email: "lb@example.com", Name: "LB", Role: "user"})
	require.NoError(t, err)
	lb, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{OwnerID: u.ID, Name: "lb", Slug: "lb-abc123", KubernetesVersion: "v1.34.0", PublicAccessMode: "loadbalancer"})
	require.NoError(t, err)
	_, err = q.ClusterSetLBAddress(ctx, queries.ClusterSetLBAddressParams{ID: lb.ID, LbAddress: "203.0.113.1"})
	require.NoError(t, err)
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: vcluster.Namespace(lb)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	svc, err := client.CoreV1().Services(vcluster.Namespace(lb)).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: vcluster.ReleaseName(lb), Labels: map[string]string{vcluster.LabelClusterID: strconv.FormatInt(lb.ID, 10)}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb.example.net"}}
	_, err = client.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	work()
	got, err := q.ClusterGetByID(ctx, lb.ID)
	require.NoError(t, err)
	require.Equal(t, "lb.example.net", got.LbAddress)
}
