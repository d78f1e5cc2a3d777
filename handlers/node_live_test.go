package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestNodeLive: the node page polls its live panel, which shows what
// changed in the cluster since the page was loaded (a condition, a new
// pod with its containers' readiness and restarts), says so plainly and
// stops polling once the node is gone, and keeps polling while the
// cluster cannot be reached.
func TestNodeLive(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	c, _ := b.SignedUpUser(t, "live")
	cl, kc := b.VirtualCluster(t, c, "live")
	handlerstest.AddNode(t, kc, "worker-1", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	handlerstest.AddWorkloads(t, kc, "worker-1")

	page := fmt.Sprintf("/clusters/%d/nodes/worker-1", cl.ID)
	live := page + "/live"
	code, body := c.Get(page)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, fmt.Sprintf(`id="node-live" data-testid="node-live" hx-get="%s" hx-trigger="every 5s" hx-swap="outerHTML"`, live))
	require.Contains(t, body, `data-testid="node-cordon"`)
	require.NotContains(t, body, "KubeletNotReady")

	handlerstest.SetNotReady(t, kc, "worker-1", "container runtime is down")
	resp, panel := c.HTMX(live)
	require.Equal(t, http.StatusOK, resp.StatusCode, panel)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.True(t, strings.HasPrefix(strings.TrimSpace(panel), `<section id="node-live"`), panel)
	require.Contains(t, panel, `hx-trigger="every 5s"`)
	require.Contains(t, panel, `<span class="node-badge" data-status="NotReady" data-testid="node-status">NotReady</span>`)
	require.Contains(t, panel, `<td data-testid="node-condition-message">container runtime is down</td>`)
	require.Contains(t, panel, "KubeletNotReady")
	section := panel[:strings.Index(panel, "</section>")]
	require.NotContains(t, section, "node-cordon", "the actions stay out of the refreshed part")
	require.Contains(t, panel[len(section):], `hx-swap-oob="true"`, "but Cordon or Uncordon follows out of band")
	require.Contains(t, panel[len(section):], `data-testid="node-cordon"`)
	// Cordoned meanwhile (a drain does so): the poll offers Uncordon.
	n, err := kc.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{})
	require.NoError(t, err)
	n.Spec.Unschedulable = true
	_, err = kc.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, panel = c.HTMX(live)
	require.Contains(t, panel, fmt.Sprintf(`<form id="node-cordon-action" method="post" action="%s/uncordon" class="inline-form" hx-swap-oob="true">`, page))
	require.Contains(t, panel, `data-testid="node-uncordon"`)
	require.NotContains(t, panel, "late-pod")

	// A pod scheduled after the page was loaded, its container ready
	// after three restarts.
	p, err := kc.CoreV1().Pods("apps").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "late-pod"},
		Spec:       corev1.PodSpec{NodeName: "worker-1", Containers: []corev1.Container{{Name: "main", Image: "busybox"}, {Name: "side", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "main", Image: "busybox", Ready: true, RestartCount: 3},
		{Name: "side", Image: "busybox"},
	}
	_, err = kc.CoreV1().Pods("apps").UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, panel = c.HTMX(live)
	require.Contains(t, panel, `data-pod="apps/late-pod"`)
	row := panel[strings.Index(panel, `data-pod="apps/late-pod"`):]
	row = row[:strings.Index(row, "</tr>")]
	require.Contains(t, row, `<td data-testid="node-pod-phase">Running</td>`)
	require.Contains(t, row, `<td data-testid="node-pod-ready">1/2</td>`)
	require.Contains(t, row, `<td data-testid="node-pod-restarts">3</td>`)
	require.Regexp(t, `>\d+s</time>`, row, "a pod created seconds ago")

	// Outside htmx the route is the node's page.
	code, _ = c.Get(live)
	require.Equal(t, http.StatusSeeOther, code)

	// Deleted by someone else: the panel says so and stops polling.
	require.NoError(t, kc.CoreV1().Nodes().Delete(ctx, "worker-1", metav1.DeleteOptions{}))
	resp, panel = c.HTMX(live)
	require.Equal(t, http.StatusOK, resp.StatusCode, panel)
	require.Contains(t, panel, "This node is no longer in the cluster.")
	require.NotContains(t, panel, "node-cordon-action", "no action for a node that is gone")
	require.NotContains(t, panel, "hx-trigger")
	require.NotContains(t, panel, "hx-get")

	// A cluster that cannot be reached: a short message, and the panel
	// asks again.
	host := testenv.HostKube(t).Client(t)
	require.NoError(t, host.CoreV1().Secrets(clusters.Namespace(cl)).Delete(ctx, clusters.KubeconfigSecretName(cl), metav1.DeleteOptions{}))
	resp, panel = c.HTMX(live)
	require.Equal(t, http.StatusOK, resp.StatusCode, panel)
	require.Contains(t, panel, `data-testid="node-live-error"`)
	require.Contains(t, panel, "control plane cannot be reached")
	require.Contains(t, panel, `hx-trigger="every 5s"`)
}
