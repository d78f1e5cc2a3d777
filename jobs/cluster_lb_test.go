package jobs_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
)

// TestLoadBalancerAddress: a LoadBalancer cluster is ready once its
// control plane is and the host has given its Service an address, which
// is recorded for the edge; until then it waits, and says for what.
func TestLoadBalancerAddress(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	ctx := context.Background()
	w := b.worker(t, time.Minute)
	c, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, b.owner.ID), clusters.Input{Name: "lb", PublicAccessMode: "loadbalancer"}, audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	res, err := b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	svc, err := b.client.CoreV1().Services(vcluster.Namespace(c)).Get(ctx, vcluster.ReleaseName(c), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.ServiceTypeLoadBalancer, svc.Spec.Type)
	require.Equal(t, strconv.FormatInt(c.ID, 10), svc.Labels[vcluster.LabelClusterID], "the edge finds it by the cluster's id")

	b.playControlPlane(t, c, testenv.NewKube(t))
	res, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "waits for the load balancer")
	c = b.cluster(t, c.ID)
	require.Equal(t, "provisioning", c.Status)
	require.Empty(t, c.LbAddress)
	reasons := b.reasons(t, c.ID)
	require.Equal(t, "WaitingForLoadBalancer", reasons[len(reasons)-1])

	// The host's load balancer controller gives it an address.
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.9"}}
	_, err = b.client.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	res, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	c = b.cluster(t, c.ID)
	require.Equal(t, "ready", c.Status)
	require.Equal(t, "203.0.113.9", c.LbAddress)
}
