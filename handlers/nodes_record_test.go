package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// pointClusterAt rewrites the cluster's kubeconfig to reach its control
// plane at addr.
func pointClusterAt(t *testing.T, cl queries.Cluster, addr string) {
	t.Helper()
	ctx := context.Background()
	host := testenv.HostKube(t).Client(t)
	s, err := host.CoreV1().Secrets(clusters.Namespace(cl)).Get(ctx, clusters.KubeconfigSecretName(cl), metav1.GetOptions{})
	require.NoError(t, err)
	s.Data["config"] = []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: hanging
  cluster:
    server: https://%s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: nobody
contexts:
- name: hanging
  context: {cluster: hanging, user: admin}
current-context: hanging
`, addr))
	_, err = host.CoreV1().Secrets(clusters.Namespace(cl)).Update(ctx, s, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// rowOf is the list's row of the node, or "".
func rowOf(body, node string) string {
	return regexp.MustCompile(`(?s)<tr data-testid="node-row" data-node="` + regexp.QuoteMeta(node) + `">.*?</tr>`).FindString(body)
}

// TestNodesListFromRecord: the nodes page lists the nodes the health check
// recorded, never the cluster's live ones: a node that joined since shows
// once the next check has run. It says when the record was taken; the
// user's own cordon shows at once. With the control plane unreachable the
// list still comes at once, from the record, and says since when; the
// node page gives up on the hanging control plane after nodes.LiveTimeout
// and shows the node as recorded, saying why.
func TestNodesListFromRecord(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupWorking(t)
	ctx := context.Background()
	q := queries.New(b.Pool)
	c, _ := b.SignedUpUser(t, "recorded")
	cl, kc := b.VirtualCluster(t, c, "recorded")
	handlerstest.AddNode(t, kc, "worker-1", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	// The cluster's health check, as the cluster becoming ready schedules.
	require.NoError(t, checks.Schedule(ctx, q, cl.ID, checks.NodeHealth, time.Now().Add(time.Hour)))

	base := fmt.Sprintf("/clusters/%d/nodes", cl.ID)
	code, body := c.Get(base)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `data-testid="nodes-empty"`, "nothing recorded yet")
	require.NotContains(t, body, `data-testid="nodes-updated"`, "never checked")

	b.RunNodeHealth(t, cl.ID)
	code, body = c.Get(base)
	require.Equal(t, http.StatusOK, code, body)
	row := rowOf(body, "worker-1")
	require.NotEmpty(t, row, body)
	for _, want := range []string{`data-status="Ready"`, "<td>worker</td>", "v1.34.0", "linux/arm64", "10.0.0.7", "203.0.113.7"} {
		require.Contains(t, row, want)
	}
	require.NotContains(t, row, "node-cordoned")
	require.NotContains(t, row, `<time datetime="0001-01-01`, "the Node's creation time is recorded")
	require.Regexp(t, `data-testid="nodes-updated"><small><time datetime="[^"]+" title="[^"]+">Updated \d+s ago</time>`, body)
	require.NotContains(t, body, `data-testid="nodes-unreachable"`)

	// A node that joins meanwhile shows after the next check, not before.
	handlerstest.AddNode(t, kc, "worker-2", corev1.ConditionFalse, time.Now())
	_, body = c.Get(base)
	require.Empty(t, rowOf(body, "worker-2"), "not listed live")
	_, rows := c.HTMXGet(base)
	require.Empty(t, rowOf(rows, "worker-2"), "nor on the refresh")
	require.NotEmpty(t, rowOf(rows, "worker-1"))
	b.RunNodeHealth(t, cl.ID)
	_, rows = c.HTMXGet(base)
	require.Contains(t, rowOf(rows, "worker-2"), `data-status="NotReady"`)

	// The user's own cordon shows at once, and so does the uncordon.
	nodePage := base + "/worker-1"
	resp := c.Post(nodePage, nodePage+"/cordon", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, rows = c.HTMXGet(base)
	require.Contains(t, rowOf(rows, "worker-1"), `data-testid="node-cordoned"`)
	resp = c.Post(nodePage, nodePage+"/uncordon", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, rows = c.HTMXGet(base)
	require.NotContains(t, rowOf(rows, "worker-1"), `data-testid="node-cordoned"`)

	// The control plane hangs, and the health check has found it so.
	pointClusterAt(t, cl, testenv.HangingListener(t))
	rec := checks.Recorder{Q: q}
	require.NoError(t, rec.Done(ctx, cl.ID, checks.NodeHealth, time.Minute, time.Time{},
		checks.Unreachable(errors.New("list nodes: context deadline exceeded"))))
	check, err := q.ClusterCheckGet(ctx, queries.ClusterCheckGetParams{ClusterID: cl.ID, Kind: string(checks.NodeHealth)})
	require.NoError(t, err)
	since := check.UnreachableSince.Time
	start := time.Now()
	code, body = c.Get(base)
	require.Less(t, time.Since(start), time.Second, "the list asks nothing of the cluster")
	require.Equal(t, http.StatusOK, code, body)
	require.NotEmpty(t, rowOf(body, "worker-1"))
	require.NotEmpty(t, rowOf(body, "worker-2"))
	require.Contains(t, body, `data-testid="nodes-unreachable"`)
	require.Contains(t, body, "The platform has not reached this cluster&#39;s control plane since")
	require.Contains(t, body, fmt.Sprintf(`<time datetime="%s">`, since.UTC().Format(time.RFC3339)))
	require.Contains(t, body, "list nodes: context deadline exceeded")
	require.Regexp(t, `Updated \d+s ago`, body, "as of the last record")
	start = time.Now()
	code, rows = c.HTMXGet(base)
	require.Less(t, time.Since(start), time.Second)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, rows, `data-testid="nodes-unreachable"`)
	require.Contains(t, rows, `hx-trigger="every 5s"`, "and keeps refreshing")

	// The node page gives up after the call timeout and shows the record.
	start = time.Now()
	code, body = c.Get(nodePage)
	took := time.Since(start)
	require.Equal(t, http.StatusOK, code, body)
	require.Less(t, took, nodes.LiveTimeout+time.Second, "bounded by the live timeout")
	require.Contains(t, body, `data-testid="node-live-error"`)
	require.Contains(t, body, "control plane cannot be reached")
	require.Contains(t, body, `data-testid="node-recorded"`)
	require.Contains(t, body, "KubeletReady", "its recorded conditions")
	require.Contains(t, body, "linux/arm64")
	require.Contains(t, body, `hx-trigger="every 5s"`, "and asks again")
	start = time.Now()
	resp, panel := c.HTMX(nodePage + "/live")
	require.Less(t, time.Since(start), nodes.LiveTimeout+time.Second)
	require.Equal(t, http.StatusOK, resp.StatusCode, panel)
	require.Contains(t, panel, `data-testid="node-live-error"`)
	require.Contains(t, panel, `data-testid="node-recorded"`)
	require.Contains(t, panel, `<span class="node-badge" data-status="Ready" data-testid="node-status">Ready</span>`)
	require.NotContains(t, panel, "node-cordon-action", "no action while the cluster cannot be reached")

	// A node never recorded shows by its name alone, saying why.
	code, body = c.Get(base + "/worker-3")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="live-unavailable"`)
}
