package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestUnreachableControlPlanePages: with the cluster's control plane a
// listener that never answers, the node pages, the drain and delete
// pages and the actions answer within 2.5 s, from what the platform
// recorded, with the live parts marked unavailable and a Retry link;
// never a bad gateway.
func TestUnreachableControlPlanePages(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "faraway")
	cl := b.NewCluster(t, c, "faraway")
	handlerstest.PutKubeconfigSecret(t, cl)
	b.MarkReady(t, cl)
	pointClusterAt(t, cl, testenv.HangingListener(t))
	// The health check recorded worker-1 before the control plane hung.
	row, err := nodes.Row(cl.ID, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Labels: map[string]string{"node-role.kubernetes.io/worker": ""}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.34.0", OperatingSystem: "linux", Architecture: "amd64"},
		},
	}, time.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.NoError(t, queries.New(b.Pool).NodeUpsert(ctx, row))

	base := fmt.Sprintf("/clusters/%d/nodes", cl.ID)
	timed := func(what string, do func() (int, string)) (int, string) {
		t.Helper()
		start := time.Now()
		code, body := do()
		require.Less(t, time.Since(start), 2500*time.Millisecond, what)
		require.NotEqual(t, http.StatusBadGateway, code, what)
		return code, body
	}
	code, body := timed("nodes", func() (int, string) { return c.Get(base) })
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `data-node="worker-1"`)

	for _, page := range []string{base + "/worker-1", base + "/worker-9", base + "/worker-1/drain", base + "/worker-1/delete"} {
		code, body := timed(page, func() (int, string) { return c.Get(page) })
		require.Equal(t, http.StatusOK, code, page)
		require.Contains(t, body, `data-testid="live-unavailable"`, page)
		require.Contains(t, body, `data-testid="live-unavailable-retry"`, page)
	}
	_, body = c.Get(base + "/worker-1")
	require.Contains(t, body, `data-testid="node-recorded"`, "as recorded")
	require.Contains(t, body, "KubeletReady")

	// The actions go back to the node page, which says why.
	for _, action := range []string{"cordon", "drain", "delete"} {
		form := map[string][]string{"ignore_daemonsets": {"on"}, "grace_period": {"-1"}, "timeout": {"300"}}
		start := time.Now()
		resp := c.Post(base, base+"/worker-1/"+action, form) // the token from the list, which asks nothing of the cluster
		require.Less(t, time.Since(start), 2500*time.Millisecond, action)
		require.Equal(t, "The cluster's control plane did not answer in time: live details are unavailable. What is shown was last recorded by the platform.",
			followFlash(t, c, resp), action)
	}
}
