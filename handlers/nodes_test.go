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
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// virtualCluster makes a ready cluster of c's whose virtual control plane
// is a second real apiserver, and returns a client of that apiserver.
func (b *testBundle) virtualCluster(t *testing.T, c *client, name string) (queries.Cluster, kubernetes.Interface) {
	t.Helper()
	cl, virt := b.readyVirtualCluster(t, c, name)
	return cl, virt.Client(t)
}

// addNode plays a kubelet registering: a Node with its status.
func addNode(t *testing.T, kc kubernetes.Interface, name string, ready corev1.ConditionStatus, since time.Time) {
	t.Helper()
	ctx := context.Background()
	n, err := kc.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux"},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	n.Status = corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(since),
		}},
		Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}, {Type: corev1.NodeExternalIP, Address: "203.0.113.7"}},
		NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.34.0", OperatingSystem: "linux", Architecture: "arm64"},
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3500m"), corev1.ResourceMemory: resource.MustParse("7Gi")},
	}
	_, err = kc.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

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

// addWorkloads puts on the node a ReplicaSet's pod, a DaemonSet's pod and
// a ReplicaSet's pod with emptyDir data, in namespace apps.
func addWorkloads(t *testing.T, kc kubernetes.Interface, node string) {
	t.Helper()
	ctx := context.Background()
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// The ServiceAccount admission plugin wants the namespace's default
	// account; no controller makes it here.
	_, err = kc.CoreV1().ServiceAccounts("apps").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": "agent"}
	ds, err := kc.AppsV1().DaemonSets("apps").Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "busybox"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	yes := true
	rs := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f", UID: types.UID("8a4b3c2d-0000-4000-8000-000000000001"), Controller: &yes}
	dsRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes}
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f-a", OwnerReferences: []metav1.OwnerReference{rs}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "agent-x", Labels: labels, OwnerReferences: []metav1.OwnerReference{dsRef}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f-cache", OwnerReferences: []metav1.OwnerReference{rs}}, Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}},
	}
	for _, p := range pods {
		p.Spec.NodeName = node
		p.Spec.Containers = []corev1.Container{{Name: "main", Image: "busybox"}}
		_, err := kc.CoreV1().Pods("apps").Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// addBarePod puts on the node, in namespace bare, a pod that no
// controller manages.
func addBarePod(t *testing.T, kc kubernetes.Interface, node, name string) {
	t.Helper()
	ctx := context.Background()
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// The ServiceAccount admission plugin wants the namespace's default
	// account; no controller makes it here.
	_, err = kc.CoreV1().ServiceAccounts("bare").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.CoreV1().Pods("bare").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// playKubelet finishes the deletion of the node's pods, as the kubelet
// would once their containers stopped, until the test ends.
func playKubelet(t *testing.T, kc kubernetes.Interface, node string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(func() { cancel(); wg.Wait() })
	go func() {
		defer wg.Done()
		zero := int64(0)
		for ctx.Err() == nil {
			pods, err := kc.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
			if err == nil {
				for _, p := range pods.Items {
					if p.DeletionTimestamp != nil {
						_ = kc.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
					}
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
}

// podsOn are the names of the pods on a node.
func podsOn(t *testing.T, kc kubernetes.Interface, node string) []string {
	t.Helper()
	pods, err := kc.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	require.NoError(t, err)
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	return names
}

func unschedulable(t *testing.T, kc kubernetes.Interface, node string) bool {
	t.Helper()
	n, err := kc.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	return n.Spec.Unschedulable
}

// waitOperation waits for a node operation to finish and returns it.
func (b *testBundle) waitOperation(t *testing.T, id int64) queries.NodeOperation {
	t.Helper()
	var op queries.NodeOperation
	waitFor(t, func() bool {
		var err error
		op, err = queries.New(b.pool).NodeOperationGetByID(context.Background(), id)
		require.NoError(t, err)
		return op.Status != nodes.OperationRunning
	}, "the node operation finishes")
	return op
}

func (b *testBundle) latestOperation(t *testing.T, cl queries.Cluster, node string) queries.NodeOperation {
	t.Helper()
	op, err := queries.New(b.pool).NodeOperationLatest(context.Background(), queries.NodeOperationLatestParams{ClusterID: cl.ID, NodeName: node})
	require.NoError(t, err)
	return op
}

func (b *testBundle) auditCount(t *testing.T, action string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_events WHERE action = $1", action).Scan(&n))
	return n
}

// htmxGet fetches a fragment as htmx does.
func (c *client) htmxGet(path string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	require.NoError(c.t, err)
	req.Header.Set("HX-Request", "true")
	resp, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	return resp.StatusCode, readBody(c.t, resp)
}

// TestNodesConsole lists and shows nodes, cordons and uncordons one, and
// drains it through the node_drain job: the ReplicaSet's pods are evicted
// (the emptyDir one too, as asked), the DaemonSet's pod stays.
func TestNodesConsole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, _ := b.signedUpUser(t, "nodes")
	cl, kc := b.virtualCluster(t, c, "nodes")
	addNode(t, kc, "worker-1", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	addWorkloads(t, kc, "worker-1")
	playKubelet(t, kc, "worker-1")
	// The node controller sets Ready to Unknown when a kubelet stops
	// posting its status: the console says NotReady, and why.
	addNode(t, kc, "silent-1", corev1.ConditionUnknown, time.Now().Add(-time.Minute))

	_, detail := c.get(fmt.Sprintf("/clusters/%d", cl.ID))
	require.Contains(t, detail, fmt.Sprintf(`href="/clusters/%d/nodes"`, cl.ID))
	// The list shows the nodes the health check recorded.
	b.runNodeHealth(t, cl.ID)

	base := fmt.Sprintf("/clusters/%d/nodes", cl.ID)
	code, body := c.get(base)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `data-node="worker-1"`)
	require.Contains(t, body, "10.0.0.7")
	require.Contains(t, body, "203.0.113.7")
	require.Contains(t, body, "linux/arm64")
	require.Contains(t, body, `hx-trigger="every 5s"`)
	require.Contains(t, body, `data-testid="node-joined-with"></td>`, "no token recorded yet")
	require.Contains(t, body, "NotReady (kubelet not reporting)")

	// Once the token sync has seen the node's CSR, the list names its token.
	jt, err := queries.New(b.pool).JoinTokenCreate(context.Background(), queries.JoinTokenCreateParams{
		ClusterID: cl.ID, TokenID: "abc123", TokenHash: "nodes-test-hash", SealedToken: "sealed", Description: "rack 7",
	})
	require.NoError(t, err)
	_, err = queries.New(b.pool).JoinTokenNodeRecord(context.Background(), queries.JoinTokenNodeRecordParams{TokenID: jt.ID, NodeName: "worker-1", CsrName: "csr-1"})
	require.NoError(t, err)
	_, body = c.get(base)
	require.Contains(t, body, `data-testid="node-joined-with">rack 7</td>`)
	// A join seen before its Node exists: the health check that lists the
	// node names the token.
	_, err = queries.New(b.pool).JoinTokenNodeRecord(context.Background(), queries.JoinTokenNodeRecordParams{TokenID: jt.ID, NodeName: "worker-2", CsrName: "csr-2"})
	require.NoError(t, err)
	addNode(t, kc, "worker-2", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	b.runNodeHealth(t, cl.ID)
	_, body = c.get(base)
	require.Equal(t, 2, strings.Count(body, `data-testid="node-joined-with">rack 7</td>`), "both nodes name their token")
	require.NoError(t, kc.CoreV1().Nodes().Delete(context.Background(), "worker-2", metav1.DeleteOptions{}))
	b.runNodeHealth(t, cl.ID)
	code, rows := c.htmxGet(base)
	require.Equal(t, http.StatusOK, code)
	require.True(t, strings.HasPrefix(strings.TrimSpace(rows), `<tbody id="node-rows"`), rows)

	nodePage := base + "/worker-1"
	code, body = c.get(nodePage)
	require.Equal(t, http.StatusOK, code, body)
	for _, want := range []string{"web-5d8f-a", "agent-x", "web-5d8f-cache", "3500m", "8Gi", "node-role.kubernetes.io/worker=", "KubeletReady"} {
		require.Contains(t, body, want)
	}
	code, _ = c.get(base + "/no-such-node")
	require.Equal(t, http.StatusNotFound, code)

	// Cordon and uncordon.
	resp := c.post(nodePage, nodePage+"/cordon", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.True(t, unschedulable(t, kc, "worker-1"))
	_, body = c.get(nodePage)
	require.Contains(t, body, "SchedulingDisabled")
	require.Equal(t, 1, b.auditCount(t, "node.cordon"))
	resp = c.post(nodePage, nodePage+"/uncordon", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.False(t, unschedulable(t, kc, "worker-1"))
	require.Equal(t, 1, b.auditCount(t, "node.uncordon"))

	// Drain: a bad form is shown again; then the drain runs.
	code, body = c.get(nodePage + "/drain")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `name="ignore_daemonsets"`)
	resp = c.post(nodePage+"/drain", nodePage+"/drain", url.Values{"grace_period": {"-5"}, "timeout": {"60"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	resp = c.post(nodePage+"/drain", nodePage+"/drain", url.Values{
		"ignore_daemonsets": {"on"}, "delete_emptydir_data": {"on"}, "grace_period": {"-1"}, "timeout": {"60"},
	})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, nodePage, resp.Header.Get("Location"))
	op := b.waitOperation(t, b.latestOperation(t, cl, "worker-1").ID)
	require.Equal(t, nodes.OperationSucceeded, op.Status, op.Message)
	progress := strings.Join(op.Progress, "\n")
	require.Contains(t, progress, "pod/web-5d8f-a in apps evicted")
	require.Contains(t, progress, "pod/web-5d8f-cache in apps evicted")
	require.Contains(t, progress, "ignoring DaemonSet-managed Pods: apps/agent-x")
	require.Contains(t, progress, "node/worker-1 drained")
	require.Equal(t, []string{"agent-x"}, podsOn(t, kc, "worker-1"))
	require.True(t, unschedulable(t, kc, "worker-1"))
	require.Equal(t, 1, b.auditCount(t, "node.drain"))

	// The finished operation stops the page's polling.
	code, panel := c.htmxGet(fmt.Sprintf("%s/operations/%d", nodePage, op.ID))
	require.Equal(t, 286, code)
	require.Contains(t, panel, `data-status="succeeded"`)
	require.NotContains(t, panel, "hx-trigger")
	_, body = c.get(nodePage)
	require.Contains(t, body, "node/worker-1 drained")

	// Delete, draining first: the Node goes and the page shows the reset.
	resp = c.post(nodePage+"/delete", nodePage+"/delete", url.Values{
		"drain_first": {"on"}, "ignore_daemonsets": {"on"}, "grace_period": {"0"}, "timeout": {"60"},
	})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	op = b.waitOperation(t, b.latestOperation(t, cl, "worker-1").ID)
	require.Equal(t, nodes.OperationSucceeded, op.Status, op.Message)
	require.Equal(t, fmt.Sprintf("%s/operations/%d", nodePage, op.ID), resp.Header.Get("Location"))
	_, err = kc.CoreV1().Nodes().Get(context.Background(), "worker-1", metav1.GetOptions{})
	require.Error(t, err)
	code, body = c.get(resp.Header.Get("Location"))
	require.Equal(t, http.StatusOK, code)
	m := regexp.MustCompile(`data-testid="node-reset-command"><code>([^<]*)</code>`).FindStringSubmatch(body)
	require.NotNil(t, m, body)
	reset := html.UnescapeString(m[1])
	require.Equal(t, fmt.Sprintf("curl -fsSL %s/join/<JOIN-TOKEN> | sudo sh -s -- --reset-only", b.server.URL), reset,
		"the platform's join script, which verifies the control plane with the cluster's CA (TestJoinScript runs it with --reset-only)")
	require.NotContains(t, reset, "-k", "no certificate check skipped")
	require.Equal(t, 1, b.auditCount(t, "node.delete"))

	// While the cluster is being updated the open list says so and keeps
	// asking; a fresh visit is refused with the reason.
	_, err = b.pool.Exec(context.Background(), "UPDATE clusters SET status = 'updating' WHERE id = $1", cl.ID)
	require.NoError(t, err)
	code, rows = c.htmxGet(base)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, rows, `data-testid="nodes-error"`)
	require.Contains(t, rows, `hx-trigger="every 5s"`)
	code, _ = c.get(base)
	require.Equal(t, http.StatusConflict, code)
}

// TestNodesAPI lists, cordons, drains and deletes nodes with an API key.
func TestNodesAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, _ := b.signedUpUser(t, "nodesapi")
	key := c.createKey("nodes")
	cl, kc := b.virtualCluster(t, c, "nodesapi")
	addNode(t, kc, "worker-a", corev1.ConditionTrue, time.Now())
	addNode(t, kc, "worker-b", corev1.ConditionFalse, time.Now())
	base := fmt.Sprintf("/api/v1/clusters/%d/nodes", cl.ID)

	r := b.apiCall(t, http.MethodGet, base, key, "")
	require.Equal(t, http.StatusOK, r.status, r.body)
	var list struct {
		Nodes []struct {
			Name          string   `json:"name"`
			Status        string   `json:"status"`
			Roles         []string `json:"roles"`
			Unschedulable bool     `json:"unschedulable"`
			InternalIP    string   `json:"internal_ip"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.body), &list))
	require.Len(t, list.Nodes, 2)
	require.Equal(t, "worker-a", list.Nodes[0].Name)
	require.Equal(t, "Ready", list.Nodes[0].Status)
	require.Equal(t, "NotReady", list.Nodes[1].Status)
	require.Equal(t, []string{"worker"}, list.Nodes[0].Roles)
	require.Equal(t, "10.0.0.7", list.Nodes[0].InternalIP)

	r = b.apiCall(t, http.MethodPost, base+"/worker-a/cordon", key, "")
	require.Equal(t, http.StatusNoContent, r.status, r.body)
	require.True(t, unschedulable(t, kc, "worker-a"))
	r = b.apiCall(t, http.MethodPost, base+"/worker-a/uncordon", key, "")
	require.Equal(t, http.StatusNoContent, r.status, r.body)
	require.False(t, unschedulable(t, kc, "worker-a"))

	r = b.apiCall(t, http.MethodPost, base+"/worker-a/drain", key, `{"timeout_seconds": 0}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, r.body)
	// A pod no controller manages stops a drain, unless it is forced.
	addBarePod(t, kc, "worker-a", "scratch")
	playKubelet(t, kc, "worker-a")
	r = b.apiCall(t, http.MethodPost, base+"/worker-a/drain", key, `{"timeout_seconds": 30}`)
	require.Equal(t, http.StatusAccepted, r.status, r.body)
	var op struct {
		ID     int64  `json:"id"`
		Kind   string `json:"kind"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.body), &op))
	require.Equal(t, "drain", op.Kind)
	done := b.waitOperation(t, op.ID)
	require.Equal(t, nodes.OperationFailed, done.Status)
	require.Contains(t, done.Message, "cannot delete Pods that declare no controller")
	require.Equal(t, []string{"scratch"}, podsOn(t, kc, "worker-a"))
	r = b.apiCall(t, http.MethodPost, base+"/worker-a/drain", key, `{"timeout_seconds": 30, "force": true}`)
	require.Equal(t, http.StatusAccepted, r.status, r.body)
	require.NoError(t, json.Unmarshal([]byte(r.body), &op))
	done = b.waitOperation(t, op.ID)
	require.Equal(t, nodes.OperationSucceeded, done.Status, done.Message)
	require.Contains(t, strings.Join(done.Progress, "\n"), "pod/scratch in bare evicted")
	require.Empty(t, podsOn(t, kc, "worker-a"))
	require.True(t, unschedulable(t, kc, "worker-a"))

	r = b.apiCall(t, http.MethodDelete, base+"/worker-b", key, "")
	require.Equal(t, http.StatusAccepted, r.status, r.body)
	require.NoError(t, json.Unmarshal([]byte(r.body), &op))
	require.Equal(t, "delete", op.Kind)
	done = b.waitOperation(t, op.ID)
	require.Equal(t, nodes.OperationSucceeded, done.Status, done.Message)
	nodes, err := kc.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, nodes.Items, 1)

	r = b.apiCall(t, http.MethodPost, base+"/worker-b/cordon", key, "")
	require.Equal(t, http.StatusNotFound, r.status, r.body)
	r = b.apiCall(t, http.MethodGet, base, "", "")
	require.Equal(t, http.StatusUnauthorized, r.status)
}

// runNodeHealth runs the cluster's node_health job once and waits for it.
func (b *testBundle) runNodeHealth(t *testing.T, clusterID int64) {
	t.Helper()
	ctx := context.Background()
	res, err := b.river.Insert(ctx, nodes.HealthArgs{ClusterID: clusterID}, nil)
	require.NoError(t, err)
	waitFor(t, func() bool {
		j, err := b.river.JobGet(ctx, res.Job.ID)
		require.NoError(t, err)
		require.NotEqual(t, "discarded", string(j.State), j.Errors)
		return j.State == "completed"
	}, "the node_health job runs")
}

// waitMail waits for the message to email with this subject.
func (b *testBundle) waitMail(t *testing.T, email, subject string) testenv.Message {
	t.Helper()
	var found testenv.Message
	waitFor(t, func() bool {
		for _, m := range b.mail.Messages(t, email) {
			if m.Subject == subject {
				found = m
				return true
			}
		}
		return false
	}, "the email "+subject)
	return found
}

type notificationRow struct {
	title  string
	unread bool
}

func (b *testBundle) notifications(t *testing.T, email string) []notificationRow {
	t.Helper()
	var out []notificationRow
	for _, n := range b.notices(t, email, notify.NodeNotReady) {
		out = append(out, notificationRow{title: n.title, unread: n.unread})
	}
	return out
}

// TestNodeHealth snapshots the nodes, tells the owner once (in-app and by
// email) about a node NotReady past the threshold, and tells again when
// it recovers, clearing the first notification.
func TestNodeHealth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, email := b.signedUpUser(t, "health")
	cl, kc := b.virtualCluster(t, c, "health")
	addNode(t, kc, "worker-1", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	addNode(t, kc, "worker-2", corev1.ConditionTrue, time.Now().Add(-time.Hour))

	b.runNodeHealth(t, cl.ID)
	snap, err := queries.New(b.pool).NodeListByCluster(context.Background(), cl.ID)
	require.NoError(t, err)
	require.Len(t, snap, 2)
	require.True(t, snap[0].Ready)
	require.Equal(t, "v1.34.0", snap[0].KubeletVersion)
	require.Contains(t, string(snap[0].Addresses), "10.0.0.7")
	require.Empty(t, b.notifications(t, email))

	// NotReady for an hour: past the five-minute threshold. A node that
	// just turned NotReady is not reported yet.
	setReady(t, kc, "worker-1", corev1.ConditionFalse, time.Now().Add(-time.Hour))
	setReady(t, kc, "worker-2", corev1.ConditionFalse, time.Now())
	b.runNodeHealth(t, cl.ID)
	b.runNodeHealth(t, cl.ID)
	got := b.notifications(t, email)
	require.Len(t, got, 1)
	require.Equal(t, notificationRow{title: "Node worker-1 of health is not ready", unread: true}, got[0])
	m := b.waitMail(t, email, "Node worker-1 of health is not ready")
	require.Contains(t, m.Text, fmt.Sprintf("/clusters/%d/nodes/worker-1", cl.ID))

	// Ready again: the alert is cleared and the owner told.
	setReady(t, kc, "worker-1", corev1.ConditionTrue, time.Now())
	b.runNodeHealth(t, cl.ID)
	b.runNodeHealth(t, cl.ID)
	got = b.notifications(t, email)
	require.Equal(t, []notificationRow{
		{title: "Node worker-1 of health is not ready", unread: false},
		{title: "Node worker-1 of health is ready again", unread: true},
	}, got)
	b.waitMail(t, email, "Node worker-1 of health is ready again")
	count := 0
	for _, m := range b.mail.Messages(t, email) {
		if strings.HasPrefix(m.Subject, "Node worker-1") {
			count++
		}
	}
	require.Equal(t, 2, count, "one email per change")

	// A deleted node leaves the snapshot.
	require.NoError(t, kc.CoreV1().Nodes().Delete(context.Background(), "worker-2", metav1.DeleteOptions{}))
	b.runNodeHealth(t, cl.ID)
	snap, err = queries.New(b.pool).NodeListByCluster(context.Background(), cl.ID)
	require.NoError(t, err)
	require.Len(t, snap, 1)
	require.Equal(t, "worker-1", snap[0].Name)
}

// TestStaleNodeCleanup: off by default; once on, the health job deletes
// nodes NotReady for longer than the period, each audited, and keeps the
// rest.
func TestStaleNodeCleanup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c, _ := b.signedUpUser(t, "stale")
	cl, kc := b.virtualCluster(t, c, "stale")
	addNode(t, kc, "gone-long", corev1.ConditionFalse, time.Now().Add(-3*time.Hour))
	addNode(t, kc, "gone-briefly", corev1.ConditionFalse, time.Now().Add(-10*time.Minute))
	addNode(t, kc, "healthy", corev1.ConditionTrue, time.Now().Add(-5*time.Hour))

	b.runNodeHealth(t, cl.ID)
	_, err := kc.CoreV1().Nodes().Get(ctx, "gone-long", metav1.GetOptions{})
	require.NoError(t, err, "off by default")

	page := fmt.Sprintf("/clusters/%d/nodes", cl.ID)
	resp := c.post(page, fmt.Sprintf("/clusters/%d/stale-node-cleanup", cl.ID), url.Values{"hours": {"0"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body := c.get(page)
	require.Contains(t, body, "Enter a number of hours from 1 to 8760")
	require.False(t, b.cluster(t, cl.ID).StaleNodeCleanupHours.Valid, "a bad value changes nothing")

	resp = c.post(page, fmt.Sprintf("/clusters/%d/stale-node-cleanup", cl.ID), url.Values{"hours": {"2"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.get(page)
	require.Contains(t, body, `value="2"`)
	require.Equal(t, 1, b.auditCount(t, "cluster.stale_node_cleanup"))

	b.runNodeHealth(t, cl.ID)
	_, err = kc.CoreV1().Nodes().Get(ctx, "gone-long", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "NotReady for 3 hours, past the 2-hour period")
	for _, kept := range []string{"gone-briefly", "healthy"} {
		_, err = kc.CoreV1().Nodes().Get(ctx, kept, metav1.GetOptions{})
		require.NoError(t, err, kept)
	}
	require.Equal(t, 1, b.auditCount(t, "node.stale_delete"))
}
