package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/queries"
)

// setReady flips a node's Ready condition, as its kubelet (or the node
// lifecycle controller) would.
func setReady(t *testing.T, kc kubernetes.Interface, name string, ready corev1.ConditionStatus, since time.Time) {
	t.Helper()
	ctx := context.Background()
	n, err := kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	n.Status.Conditions[0].Status = ready
	n.Status.Conditions[0].LastTransitionTime = metav1.NewTime(since)
	_, err = kc.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// TestNodesConsole lists and shows nodes, cordons and uncordons one, and
// drains it through the node_drain job: the ReplicaSet's pods are evicted
// (the emptyDir one too, as asked), the DaemonSet's pod stays.
func TestNodesConsole(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupWorking(t)
	c, _ := b.SignedUpUser(t, "nodes")
	cl, kc := b.VirtualCluster(t, c, "nodes")
	handlerstest.AddNode(t, kc, "worker-1", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	handlerstest.AddWorkloads(t, kc, "worker-1")
	handlerstest.PlayKubelet(t, kc, "worker-1")
	// The node controller sets Ready to Unknown when a kubelet stops
	// posting its status: the console says NotReady, and why.
	handlerstest.AddNode(t, kc, "silent-1", corev1.ConditionUnknown, time.Now().Add(-time.Minute))

	_, detail := c.Get(fmt.Sprintf("/clusters/%d", cl.ID))
	require.Contains(t, detail, fmt.Sprintf(`href="/clusters/%d/nodes"`, cl.ID))
	// The list shows the nodes the health check recorded.
	b.RunNodeHealth(t, cl.ID)

	base := fmt.Sprintf("/clusters/%d/nodes", cl.ID)
	code, body := c.Get(base)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `data-node="worker-1"`)
	require.Contains(t, body, "10.0.0.7")
	require.Contains(t, body, "203.0.113.7")
	require.Contains(t, body, "linux/arm64")
	require.Contains(t, body, `hx-trigger="every 5s"`)
	require.Contains(t, body, `data-testid="node-joined-with"></td>`, "no token recorded yet")
	require.Contains(t, body, "NotReady (kubelet not reporting)")

	// Once the token sync has seen the node's CSR, the list names its token.
	jt, err := queries.New(b.Pool).JoinTokenCreate(context.Background(), queries.JoinTokenCreateParams{
		ClusterID: cl.ID, TokenID: "abc123", TokenHash: "nodes-test-hash", SealedToken: "sealed", Description: "rack 7",
	})
	require.NoError(t, err)
	_, err = queries.New(b.Pool).JoinTokenNodeRecord(context.Background(), queries.JoinTokenNodeRecordParams{TokenID: jt.ID, NodeName: "worker-1", CsrName: "csr-1"})
	require.NoError(t, err)
	_, body = c.Get(base)
	require.Contains(t, body, `data-testid="node-joined-with">rack 7</td>`)
	// A join seen before its Node exists: the health check that lists the
	// node names the token.
	_, err = queries.New(b.Pool).JoinTokenNodeRecord(context.Background(), queries.JoinTokenNodeRecordParams{TokenID: jt.ID, NodeName: "worker-2", CsrName: "csr-2"})
	require.NoError(t, err)
	handlerstest.AddNode(t, kc, "worker-2", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	b.RunNodeHealth(t, cl.ID)
	_, body = c.Get(base)
	require.Equal(t, 2, strings.Count(body, `data-testid="node-joined-with">rack 7</td>`), "both nodes name their token")
	require.NoError(t, kc.CoreV1().Nodes().Delete(context.Background(), "worker-2", metav1.DeleteOptions{}))
	b.RunNodeHealth(t, cl.ID)
	code, rows := c.HTMXGet(base)
	require.Equal(t, http.StatusOK, code)
	require.True(t, strings.HasPrefix(strings.TrimSpace(rows), `<tbody id="node-rows"`), rows)

	nodePage := base + "/worker-1"
	code, body = c.Get(nodePage)
	require.Equal(t, http.StatusOK, code, body)
	for _, want := range []string{"web-5d8f-a", "agent-x", "web-5d8f-cache", "3500m", "8Gi", "node-role.kubernetes.io/worker=", "KubeletReady"} {
		require.Contains(t, body, want)
	}
	code, _ = c.Get(base + "/no-such-node")
	require.Equal(t, http.StatusNotFound, code)

	// Cordon and uncordon.
	resp := c.Post(nodePage, nodePage+"/cordon", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.True(t, handlerstest.Unschedulable(t, kc, "worker-1"))
	_, body = c.Get(nodePage)
	require.Contains(t, body, "SchedulingDisabled")
	require.Equal(t, 1, b.AuditCount(t, "node.cordon"))
	resp = c.Post(nodePage, nodePage+"/uncordon", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.False(t, handlerstest.Unschedulable(t, kc, "worker-1"))
	require.Equal(t, 1, b.AuditCount(t, "node.uncordon"))

	// Drain: a bad form is shown again; then the drain runs.
	code, body = c.Get(nodePage + "/drain")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `name="ignore_daemonsets"`)
	resp = c.Post(nodePage+"/drain", nodePage+"/drain", url.Values{"grace_period": {"-5"}, "timeout": {"60"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	resp = c.Post(nodePage+"/drain", nodePage+"/drain", url.Values{
		"ignore_daemonsets": {"on"}, "delete_emptydir_data": {"on"}, "grace_period": {"-1"}, "timeout": {"60"},
	})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, nodePage, resp.Header.Get("Location"))
	op := b.WaitOperation(t, b.LatestOperation(t, cl, "worker-1").ID)
	require.Equal(t, nodes.OperationSucceeded, op.Status, op.Message)
	progress := strings.Join(op.Progress, "\n")
	require.Contains(t, progress, "pod/web-5d8f-a in apps evicted")
	require.Contains(t, progress, "pod/web-5d8f-cache in apps evicted")
	require.Contains(t, progress, "ignoring DaemonSet-managed Pods: apps/agent-x")
	require.Contains(t, progress, "node/worker-1 drained")
	require.Equal(t, []string{"agent-x"}, handlerstest.PodsOn(t, kc, "worker-1"))
	require.True(t, handlerstest.Unschedulable(t, kc, "worker-1"))
	require.Equal(t, 1, b.AuditCount(t, "node.drain"))

	// The finished operation stops the page's polling.
	code, panel := c.HTMXGet(fmt.Sprintf("%s/operations/%d", nodePage, op.ID))
	require.Equal(t, 286, code)
	require.Contains(t, panel, `data-status="succeeded"`)
	require.NotContains(t, panel, "hx-trigger")
	_, body = c.Get(nodePage)
	require.Contains(t, body, "node/worker-1 drained")

	// Delete, draining first: the Node goes and the page shows the reset.
	resp = c.Post(nodePage+"/delete", nodePage+"/delete", url.Values{
		"drain_first": {"on"}, "ignore_daemonsets": {"on"}, "grace_period": {"0"}, "timeout": {"60"},
	})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	op = b.WaitOperation(t, b.LatestOperation(t, cl, "worker-1").ID)
	require.Equal(t, nodes.OperationSucceeded, op.Status, op.Message)
	require.Equal(t, fmt.Sprintf("%s/operations/%d", nodePage, op.ID), resp.Header.Get("Location"))
	_, err = kc.CoreV1().Nodes().Get(context.Background(), "worker-1", metav1.GetOptions{})
	require.Error(t, err)
	code, body = c.Get(resp.Header.Get("Location"))
	require.Equal(t, http.StatusOK, code)
	m := regexp.MustCompile(`data-testid="node-reset-command"><code>([^<]*)</code>`).FindStringSubmatch(body)
	require.NotNil(t, m, body)
	reset := html.UnescapeString(m[1])
	require.Equal(t, fmt.Sprintf("curl -fsSL %s/join/<JOIN-TOKEN> | sudo sh -s -- --reset-only", b.Server.URL), reset,
		"the platform's join script, which verifies the control plane with the cluster's CA (TestJoinScript runs it with --reset-only)")
	require.NotContains(t, reset, "-k", "no certificate check skipped")
	require.Equal(t, 1, b.AuditCount(t, "node.delete"))

	// While the cluster is being updated the open list says so and keeps
	// asking; a fresh visit is refused with the reason.
	_, err = b.Pool.Exec(context.Background(), "UPDATE clusters SET status = 'updating' WHERE id = $1", cl.ID)
	require.NoError(t, err)
	code, rows = c.HTMXGet(base)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, rows, `data-testid="nodes-error"`)
	require.Contains(t, rows, `hx-trigger="every 5s"`)
	code, _ = c.Get(base)
	require.Equal(t, http.StatusConflict, code)
}

// TestNodesAPI lists, cordons, drains and deletes nodes with an API key.
func TestNodesAPI(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupWorking(t)
	c, _ := b.SignedUpUser(t, "nodesapi")
	key := c.CreateKey("nodes")
	cl, kc := b.VirtualCluster(t, c, "nodesapi")
	handlerstest.AddNode(t, kc, "worker-a", corev1.ConditionTrue, time.Now())
	handlerstest.AddNode(t, kc, "worker-b", corev1.ConditionFalse, time.Now())
	base := fmt.Sprintf("/api/v1/clusters/%d/nodes", cl.ID)

	r := b.APICall(t, http.MethodGet, base, key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	var list struct {
		Nodes []struct {
			Name          string   `json:"name"`
			Status        string   `json:"status"`
			Roles         []string `json:"roles"`
			Unschedulable bool     `json:"unschedulable"`
			InternalIP    string   `json:"internal_ip"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Body), &list))
	require.Len(t, list.Nodes, 2)
	require.Equal(t, "worker-a", list.Nodes[0].Name)
	require.Equal(t, "Ready", list.Nodes[0].Status)
	require.Equal(t, "NotReady", list.Nodes[1].Status)
	require.Equal(t, []string{"worker"}, list.Nodes[0].Roles)
	require.Equal(t, "10.0.0.7", list.Nodes[0].InternalIP)

	r = b.APICall(t, http.MethodPost, base+"/worker-a/cordon", key, "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	require.True(t, handlerstest.Unschedulable(t, kc, "worker-a"))
	r = b.APICall(t, http.MethodPost, base+"/worker-a/uncordon", key, "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	require.False(t, handlerstest.Unschedulable(t, kc, "worker-a"))

	r = b.APICall(t, http.MethodPost, base+"/worker-a/drain", key, `{"timeout_seconds": 0}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	// A pod no controller manages stops a drain, unless it is forced.
	handlerstest.AddBarePod(t, kc, "worker-a", "scratch")
	handlerstest.PlayKubelet(t, kc, "worker-a")
	r = b.APICall(t, http.MethodPost, base+"/worker-a/drain", key, `{"timeout_seconds": 30}`)
	require.Equal(t, http.StatusAccepted, r.Status, r.Body)
	var op struct {
		ID     int64  `json:"id"`
		Kind   string `json:"kind"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Body), &op))
	require.Equal(t, "drain", op.Kind)
	done := b.WaitOperation(t, op.ID)
	require.Equal(t, nodes.OperationFailed, done.Status)
	require.Contains(t, done.Message, "cannot delete Pods that declare no controller")
	require.Equal(t, []string{"scratch"}, handlerstest.PodsOn(t, kc, "worker-a"))
	r = b.APICall(t, http.MethodPost, base+"/worker-a/drain", key, `{"timeout_seconds": 30, "force": true}`)
	require.Equal(t, http.StatusAccepted, r.Status, r.Body)
	require.NoError(t, json.Unmarshal([]byte(r.Body), &op))
	// The answer's Location is polled until the drain is done.
	location := r.Header.Get("Location")
	require.Equal(t, fmt.Sprintf("%s/worker-a/operations/%d", base, op.ID), location)
	handlerstest.WaitFor(t, func() bool {
		r := b.APICall(t, http.MethodGet, location, key, "")
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		require.NoError(t, json.Unmarshal([]byte(r.Body), &op))
		return op.Status != nodes.OperationRunning
	}, "the drain, polled through the API")
	require.Equal(t, nodes.OperationSucceeded, op.Status, r.Body)
	r = b.APICall(t, http.MethodGet, fmt.Sprintf("%s/worker-b/operations/%d", base, op.ID), key, "")
	require.Equal(t, http.StatusNotFound, r.Status, "another node's path: %s", r.Body)
	done = b.WaitOperation(t, op.ID)
	require.Equal(t, nodes.OperationSucceeded, done.Status, done.Message)
	require.Contains(t, strings.Join(done.Progress, "\n"), "pod/scratch in bare evicted")
	require.Empty(t, handlerstest.PodsOn(t, kc, "worker-a"))
	require.True(t, handlerstest.Unschedulable(t, kc, "worker-a"))

	r = b.APICall(t, http.MethodDelete, base+"/worker-b", key, "")
	require.Equal(t, http.StatusAccepted, r.Status, r.Body)
	require.NoError(t, json.Unmarshal([]byte(r.Body), &op))
	require.Equal(t, "delete", op.Kind)
	done = b.WaitOperation(t, op.ID)
	require.Equal(t, nodes.OperationSucceeded, done.Status, done.Message)
	nodes, err := kc.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, nodes.Items, 1)

	r = b.APICall(t, http.MethodPost, base+"/worker-b/cordon", key, "")
	require.Equal(t, http.StatusNotFound, r.Status, r.Body)
	r = b.APICall(t, http.MethodGet, base, "", "")
	require.Equal(t, http.StatusUnauthorized, r.Status)
}

// TestNodeHealth snapshots the nodes, tells the owner once (in-app and by
// email) about a node NotReady past the threshold, and tells again when
// it recovers, clearing the first notification.
func TestNodeHealth(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupWorking(t)
	c, email := b.SignedUpUser(t, "health")
	cl, kc := b.VirtualCluster(t, c, "health")
	handlerstest.AddNode(t, kc, "worker-1", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	handlerstest.AddNode(t, kc, "worker-2", corev1.ConditionTrue, time.Now().Add(-time.Hour))

	b.RunNodeHealth(t, cl.ID)
	snap, err := queries.New(b.Pool).NodeListByCluster(context.Background(), cl.ID)
	require.NoError(t, err)
	require.Len(t, snap, 2)
	require.True(t, snap[0].Ready)
	require.Equal(t, "v1.34.0", snap[0].KubeletVersion)
	require.Contains(t, string(snap[0].Addresses), "10.0.0.7")
	require.Empty(t, b.Notifications(t, email))

	// NotReady for an hour: past the five-minute threshold. A node that
	// just turned NotReady is not reported yet.
	setReady(t, kc, "worker-1", corev1.ConditionFalse, time.Now().Add(-time.Hour))
	setReady(t, kc, "worker-2", corev1.ConditionFalse, time.Now())
	b.RunNodeHealth(t, cl.ID)
	b.RunNodeHealth(t, cl.ID)
	got := b.Notifications(t, email)
	require.Len(t, got, 1)
	require.Equal(t, handlerstest.NotificationRow{Title: "Node worker-1 of health is not ready", Unread: true}, got[0])
	m := b.WaitMail(t, email, "Node worker-1 of health is not ready")
	require.Contains(t, m.Text, fmt.Sprintf("/clusters/%d/nodes/worker-1", cl.ID))

	// Ready again: the alert is cleared and the owner told.
	setReady(t, kc, "worker-1", corev1.ConditionTrue, time.Now())
	b.RunNodeHealth(t, cl.ID)
	b.RunNodeHealth(t, cl.ID)
	got = b.Notifications(t, email)
	require.Equal(t, []handlerstest.NotificationRow{
		{Title: "Node worker-1 of health is not ready", Unread: false},
		{Title: "Node worker-1 of health is ready again", Unread: true},
	}, got)
	b.WaitMail(t, email, "Node worker-1 of health is ready again")
	count := 0
	for _, m := range b.Mail.Messages(t, email) {
		if strings.HasPrefix(m.Subject, "Node worker-1") {
			count++
		}
	}
	require.Equal(t, 2, count, "one email per change")

	// A deleted node leaves the snapshot.
	require.NoError(t, kc.CoreV1().Nodes().Delete(context.Background(), "worker-2", metav1.DeleteOptions{}))
	b.RunNodeHealth(t, cl.ID)
	snap, err = queries.New(b.Pool).NodeListByCluster(context.Background(), cl.ID)
	require.NoError(t, err)
	require.Len(t, snap, 1)
	require.Equal(t, "worker-1", snap[0].Name)
}

// TestStaleNodeCleanup: off by default; once on, the health job deletes
// nodes NotReady for longer than the period, each audited, and keeps the
// rest.
func TestStaleNodeCleanup(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupWorking(t)
	ctx := context.Background()
	c, _ := b.SignedUpUser(t, "stale")
	cl, kc := b.VirtualCluster(t, c, "stale")
	handlerstest.AddNode(t, kc, "gone-long", corev1.ConditionFalse, time.Now().Add(-3*time.Hour))
	handlerstest.AddNode(t, kc, "gone-briefly", corev1.ConditionFalse, time.Now().Add(-10*time.Minute))
	handlerstest.AddNode(t, kc, "healthy", corev1.ConditionTrue, time.Now().Add(-5*time.Hour))

	b.RunNodeHealth(t, cl.ID)
	_, err := kc.CoreV1().Nodes().Get(ctx, "gone-long", metav1.GetOptions{})
	require.NoError(t, err, "off by default")

	// The clean-up is set in the cluster's Settings tab.
	page := fmt.Sprintf("/clusters/%d/edit", cl.ID)
	resp := c.Post(page, fmt.Sprintf("/clusters/%d/stale-node-cleanup", cl.ID), url.Values{"hours": {"0"}})
	require.Equal(t, page, resp.Header.Get("Location"))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body := c.Get(page)
	require.Contains(t, body, "Enter a number of hours from 1 to 8760")
	require.False(t, b.Cluster(t, cl.ID).StaleNodeCleanupHours.Valid, "a bad value changes nothing")

	resp = c.Post(page, fmt.Sprintf("/clusters/%d/stale-node-cleanup", cl.ID), url.Values{"hours": {"2"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get(page)
	require.Contains(t, body, `value="2"`)
	require.Equal(t, 1, b.AuditCount(t, "cluster.stale_node_cleanup"))

	b.RunNodeHealth(t, cl.ID)
	_, err = kc.CoreV1().Nodes().Get(ctx, "gone-long", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "NotReady for 3 hours, past the 2-hour period")
	for _, kept := range []string{"gone-briefly", "healthy"} {
		_, err = kc.CoreV1().Nodes().Get(ctx, kept, metav1.GetOptions{})
		require.NoError(t, err, kept)
	}
	require.Equal(t, 1, b.AuditCount(t, "node.stale_delete"))
}
