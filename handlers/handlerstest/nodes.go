package handlerstest

import (
	"context"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// JoinCommandToken finds the join token in the join command a page shows.
var JoinCommandToken = regexp.MustCompile(`/join/([a-z0-9]{6}\.[a-z0-9]{16}) \| sudo sh`)

// ReadyVirtualCluster makes a ready cluster whose virtual control plane is
// a second apiserver, as vcluster would: its kubeconfig Secret on the host.
func (b *Bundle) ReadyVirtualCluster(t *testing.T, c *Client, name string) (queries.Cluster, *testenv.Kube) {
	t.Helper()
	ctx := context.Background()
	b.ConnectHost(t)
	cl := b.NewCluster(t, c, name)
	b.MarkReady(t, cl)
	virt := testenv.NewKube(t)
	host := testenv.HostKube(t).Client(t)
	ns := clusters.Namespace(cl)
	_, err := host.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = host.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	_, err = host.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: clusters.KubeconfigSecretName(cl)},
		Data:       map[string][]byte{"config": virt.Kubeconfig(t)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return b.Cluster(t, cl.ID), virt
}

// CreateJoinToken submits the form and returns the token from the command.
func CreateJoinToken(t *testing.T, c *Client, cl queries.Cluster, form url.Values) string {
	t.Helper()
	page := fmt.Sprintf("/clusters/%d/tokens", cl.ID)
	resp := c.Post(page, page, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, ReadBody(t, resp))
	_, body := c.Get(page)
	m := JoinCommandToken.FindAllStringSubmatch(body, -1)
	require.NotEmpty(t, m, body)
	return m[0][1] // newest first
}

// SyncJoinTokens works a join token sync of the cluster, as the worker
// would (handler tests only insert cluster jobs).
func (b *Bundle) SyncJoinTokens(t *testing.T, clusterID int64) {
	t.Helper()
	ctx := context.Background()
	w := rivertest.NewWorker(t, riverpgxv5.New(b.Pool), &river.Config{}, &jobs.JoinTokenSyncWorker{
		Tokens: &jointokens.Service{Pool: b.Pool, Box: b.Box,
			Virtual: (&clusters.Service{Pool: b.Pool, Box: b.Box, KubeconfigPath: b.HostKubeconfig}).VirtualConfig},
		Notices: notify.Notices{Box: b.Box},
	})
	tx, err := b.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // the job row only
	_, err = w.Work(ctx, t, tx, jointokens.SyncArgs{ClusterID: clusterID}, nil)
	require.NoError(t, err)
}

// JoinStatus fetches the join script of a token as a node would: the
// status, the content type and the body.
func JoinStatus(t *testing.T, b *Bundle, token string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(b.Server.URL + "/join/" + token)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Content-Type"), ReadBody(t, resp)
}

// JoinRefusal fetches the join script of a token the platform refuses:
// HTTP 200 (so that curl -f hands the script to sh) with the reason in
// the header, and returns the script.
func JoinRefusal(t *testing.T, b *Bundle, token, reason string) string {
	t.Helper()
	resp, err := http.Get(b.Server.URL + "/join/" + token)
	require.NoError(t, err)
	defer resp.Body.Close()
	body := ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, reason, resp.Header.Get("X-KubeBYON-Join-Refused"))
	require.Contains(t, body, "exit 1")
	return body
}

// ScriptToken makes a token for a ready cluster whose control plane
// endpoint is a TLS test server (its certificate the cluster's CA), with
// the shared apiserver holding its bootstrap Secret. It returns the
// cluster's id too.
func ScriptToken(t *testing.T, b *Bundle, cp *httptest.Server) (string, int64) {
	t.Helper()
	ctx := context.Background()
	_, email := b.SignedUpUser(t, "scripted")
	u, err := queries.New(b.Pool).UserGetByEmail(ctx, email)
	require.NoError(t, err)
	q := queries.New(b.Pool)
	cl, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{OwnerID: u.ID, Name: "scripted", Slug: "scripted-" + strings.ToLower(rand.Text()[:6]), KubernetesVersion: "v1.34.0", PublicAccessMode: "loadbalancer"})
	require.NoError(t, err)
	_, err = q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: cl.ID, Endpoint: strings.TrimPrefix(cp.URL, "https://"), Generation: cl.Generation})
	require.NoError(t, err)
	SetClusterCA(t, b, cl.ID, cp)
	host := testenv.HostKube(t).Config
	svc := &jointokens.Service{Pool: b.Pool, Box: b.Box, Virtual: func(context.Context, queries.Cluster) (*rest.Config, error) { return host, nil }}
	who, err := orgs.PersonalActing(ctx, b.Pool, u.ID)
	require.NoError(t, err)
	created, err := svc.Create(ctx, who, cl.ID, jointokens.Input{Lifetime: jointokens.Lifetime1Hour, Uses: jointokens.UsesOne}, audit.Actor{UserID: u.ID})
	require.NoError(t, err)
	return created.Value, cl.ID
}

// SetClusterCA makes a TLS test server's certificate the cluster's CA.
func SetClusterCA(t *testing.T, b *Bundle, clusterID int64, srv *httptest.Server) {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	_, err := b.Pool.Exec(context.Background(), "UPDATE clusters SET ca_cert = $1 WHERE id = $2", string(ca), clusterID)
	require.NoError(t, err)
}

// RunJoinScript runs a saved join script with a real sh and curl, stand-ins
// only for id (uid), systemctl and uname (host box-7 on x86_64), the
// os-release file given, systemd "running" (dir), and env added.
func RunJoinScript(t *testing.T, scriptPath, osRelease, dir, uid string, env []string, args ...string) (string, string, error) {
	t.Helper()
	bin := t.TempDir()
	stand := map[string]string{"id": "echo " + uid, "systemctl": "exit 0", "uname": `if [ "$1" = -n ]; then echo box-7; else echo x86_64; fi`}
	for name, body := range stand {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	cmd := exec.Command("sh", append([]string{scriptPath}, args...)...)
	cmd.Env = append([]string{"PATH=" + bin + ":" + os.Getenv("PATH"), "KUBEBYON_OS_RELEASE=" + osRelease, "KUBEBYON_SYSTEMD_DIR=" + dir}, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// SetNotReady turns a node's Ready condition False with a message, as its
// kubelet reports trouble.
func SetNotReady(t *testing.T, kc kubernetes.Interface, name, message string) {
	t.Helper()
	ctx := context.Background()
	n, err := kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	n.Status.Conditions[0].Status = corev1.ConditionFalse
	n.Status.Conditions[0].Reason = "KubeletNotReady"
	n.Status.Conditions[0].Message = message
	n.Status.Conditions[0].LastTransitionTime = metav1.Now()
	_, err = kc.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// nodeQuotaSyncWorker is the node_quota_sync worker as the platform runs
// it. The apiserver takes only https webhook URLs: a test served over
// http gets one it never calls, as it creates no Nodes.
func (b *Bundle) nodeQuotaSyncWorker() *jobs.NodeQuotaSyncWorker {
	base, ca := b.Server.URL, []byte(nil)
	if b.Server.TLS != nil {
		ca = b.ServerCA()
	} else {
		base = "https://" + strings.TrimPrefix(base, "http://")
	}
	return &jobs.NodeQuotaSyncWorker{
		Pool: b.Pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Box: b.Box,
		VirtualConfig: (&clusters.Service{Pool: b.Pool, Box: b.Box, KubeconfigPath: b.HostKubeconfig}).VirtualConfig,
		BaseURL:       base, CABundle: ca,
	}
}

// RewriteNodeQuotas runs the job the workers run when they start, and
// daily: it switches the node quota on in the ready clusters without it,
// queuing their syncs.
func (b *Bundle) RewriteNodeQuotas(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	w := rivertest.NewWorker(t, riverpgxv5.New(b.Pool), &river.Config{}, &jobs.NodeQuotaRewriteWorker{
		Pool: b.Pool, Box: b.Box, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	tx, err := b.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // the job row only
	res, err := w.Work(ctx, t, tx, nodequota.RewriteArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
}

// QuotaCluster is a ready cluster of c's on a virtual cluster whose node
// quota the platform switched on, with its webhook configuration written.
func (b *Bundle) QuotaCluster(t *testing.T, c *Client, name string) (queries.Cluster, *testenv.Kube) {
	t.Helper()
	cl, virt := b.ReadyVirtualCluster(t, c, name)
	b.RewriteNodeQuotas(t)
	b.SyncNodeQuota(t, cl.ID)
	cl = b.Cluster(t, cl.ID)
	require.True(t, cl.NodeQuotaEnabled)
	return cl, virt
}

// workNodeQuotaSyncs works the cluster's queued node_quota_sync jobs, as
// the worker of the clusters queue would, and returns how many there were.
func (b *Bundle) workNodeQuotaSyncs(t *testing.T, clusterID int64) int {
	t.Helper()
	ids := b.queuedNodeQuotaSyncs(t, clusterID, false)
	workJobs(t, b, b.nodeQuotaSyncWorker(), ids)
	return len(ids)
}

// workJobs works the queued jobs ids with w, each in a transaction of its
// own, as a River worker would, and requires each to complete.
func workJobs[T river.JobArgs](t *testing.T, b *Bundle, w river.Worker[T], ids []int64) {
	t.Helper()
	ctx := context.Background()
	tw := rivertest.NewWorker(t, riverpgxv5.New(b.Pool), &river.Config{}, w)
	for _, id := range ids {
		job, err := b.River.JobGet(ctx, id)
		require.NoError(t, err)
		tx, err := b.Pool.Begin(ctx)
		require.NoError(t, err)
		res, err := tw.WorkJob(ctx, t, tx, job)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind, "job %d", id)
		require.NoError(t, tx.Commit(ctx))
	}
}

// queuedNodeQuotaSyncs are the ids of the cluster's node_quota_sync jobs
// waiting to be worked; onlyUnique keeps those of the periodic re-sync.
func (b *Bundle) queuedNodeQuotaSyncs(t *testing.T, clusterID int64, onlyUnique bool) []int64 {
	t.Helper()
	rows, err := b.Pool.Query(context.Background(), `SELECT id FROM river_job
		WHERE kind = 'node_quota_sync' AND state = 'available' AND (args->>'cluster_id')::bigint = $1
		  AND (NOT $2 OR unique_key IS NOT NULL) ORDER BY id`, clusterID, onlyUnique)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return ids
}

// NodeCreateReview is what an apiserver sends before creating a Node.
const NodeCreateReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","kind":{"group":"","version":"v1","kind":"Node"},"operation":"CREATE"}}`

// Review posts a Node creation to a webhook URL, as the apiserver would,
// and returns the status and body of the answer.
func (b *Bundle) Review(t *testing.T, hookURL string) (int, string) {
	t.Helper()
	resp, err := b.Server.Client().Post(hookURL, "application/json", strings.NewReader(NodeCreateReview))
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode, ReadBody(t, resp)
}

// ServerCA is the test server's certificate, the CA bundle the virtual
// apiserver verifies the platform with.
func (b *Bundle) ServerCA() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Server.Certificate().Raw})
}

// SyncNodeQuota works the node_quota_sync jobs queued for the cluster,
// whose queue the handler tests do not work; there must be one.
func (b *Bundle) SyncNodeQuota(t *testing.T, clusterID int64) {
	t.Helper()
	require.Positive(t, b.workNodeQuotaSyncs(t, clusterID), "a node quota sync was queued")
}

// SetPlanNodes puts the user on a plan of their own with this many nodes
// per cluster.
func (b *Bundle) SetPlanNodes(t *testing.T, email string, nodes int) {
	t.Helper()
	ctx := context.Background()
	var planID int64
	require.NoError(t, b.Pool.QueryRow(ctx, `INSERT INTO plans (name, max_clusters, max_nodes_per_cluster) VALUES ($1, 3, $2) RETURNING id`,
		"plan-"+email, nodes).Scan(&planID))
	_, err := b.Pool.Exec(ctx, `UPDATE subscriptions SET plan_id = $1
		WHERE org_id = (SELECT o.id FROM organizations o JOIN users u ON u.id = o.personal_of WHERE u.email = $2)`, planID, email)
	require.NoError(t, err)
}

// VirtualCluster makes a ready cluster of c's whose virtual control plane
// is a second real apiserver, and returns a client of that apiserver.
func (b *Bundle) VirtualCluster(t *testing.T, c *Client, name string) (queries.Cluster, kubernetes.Interface) {
	t.Helper()
	cl, virt := b.ReadyVirtualCluster(t, c, name)
	return cl, virt.Client(t)
}

// AddNode plays a kubelet registering: a Node with its status.
func AddNode(t *testing.T, kc kubernetes.Interface, name string, ready corev1.ConditionStatus, since time.Time) {
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

// AddWorkloads puts on the node a ReplicaSet's pod, a DaemonSet's pod and
// a ReplicaSet's pod with emptyDir data, in namespace apps.
func AddWorkloads(t *testing.T, kc kubernetes.Interface, node string) {
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

// AddBarePod puts on the node, in namespace bare, a pod that no
// controller manages.
func AddBarePod(t *testing.T, kc kubernetes.Interface, node, name string) {
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

// PlayKubelet finishes the deletion of the node's pods, as the kubelet
// would once their containers stopped, until the test ends.
func PlayKubelet(t *testing.T, kc kubernetes.Interface, node string) {
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

// PodsOn are the names of the pods on a node.
func PodsOn(t *testing.T, kc kubernetes.Interface, node string) []string {
	t.Helper()
	pods, err := kc.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	require.NoError(t, err)
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	return names
}

// Unschedulable reports whether a node is cordoned.
func Unschedulable(t *testing.T, kc kubernetes.Interface, node string) bool {
	t.Helper()
	n, err := kc.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	return n.Spec.Unschedulable
}

// WaitOperation waits for a node operation to finish and returns it.
func (b *Bundle) WaitOperation(t *testing.T, id int64) queries.NodeOperation {
	t.Helper()
	b.needWorking(t)
	var op queries.NodeOperation
	WaitFor(t, func() bool {
		var err error
		op, err = queries.New(b.Pool).NodeOperationGetByID(context.Background(), id)
		require.NoError(t, err)
		return op.Status != nodes.OperationRunning
	}, "the node operation finishes")
	return op
}

// LatestOperation is the latest operation on a cluster's node.
func (b *Bundle) LatestOperation(t *testing.T, cl queries.Cluster, node string) queries.NodeOperation {
	t.Helper()
	op, err := queries.New(b.Pool).NodeOperationLatest(context.Background(), queries.NodeOperationLatestParams{ClusterID: cl.ID, NodeName: node})
	require.NoError(t, err)
	return op
}

// AuditCount counts the audit events of an action.
func (b *Bundle) AuditCount(t *testing.T, action string) int {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_events WHERE action = $1", action).Scan(&n))
	return n
}

// RunNodeHealth runs the cluster's node_health job once and waits for it
// (SetupWorking).
func (b *Bundle) RunNodeHealth(t *testing.T, clusterID int64) {
	t.Helper()
	b.needWorking(t)
	ctx := context.Background()
	res, err := b.River.Insert(ctx, nodes.HealthArgs{ClusterID: clusterID}, nil)
	require.NoError(t, err)
	WaitFor(t, func() bool {
		j, err := b.River.JobGet(ctx, res.Job.ID)
		require.NoError(t, err)
		require.NotEqual(t, "discarded", string(j.State), j.Errors)
		return j.State == "completed"
	}, "the node_health job runs")
}

// NotificationRow is a node-not-ready notification as its reader sees it.
type NotificationRow struct {
	Title  string
	Unread bool
}

// Notifications are the node-not-ready notifications of an account.
func (b *Bundle) Notifications(t *testing.T, email string) []NotificationRow {
	t.Helper()
	var out []NotificationRow
	for _, n := range b.Notices(t, email, notify.NodeNotReady) {
		out = append(out, NotificationRow{Title: n.title, Unread: n.unread})
	}
	return out
}
