//go:build linux

package chart_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubebyon/kubebyon/internal/apikeys"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/config"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/queries"
)

// realNodeEndpoint is the name the node reaches the control plane at (in
// its serving certificate, resolved by the node to the host).
const realNodeEndpoint = "cp.kubebyon.test"

// image is the image a pair of variables name, as make test-go passes
// them: the store name (whose tag the chart gets) and its OCI archive.
func image(t *testing.T, nameEnv, archiveEnv string) (archive, tag string) {
	t.Helper()
	name, archive := os.Getenv(nameEnv), os.Getenv(archiveEnv)
	if name == "" || archive == "" {
		t.Fatalf("%s and %s are not set: run 'make image' (make test-go passes them)", nameEnv, archiveEnv)
	}
	_, tag, ok := strings.Cut(strings.TrimPrefix(name, "ghcr.io/kubebyon/kubebyon"), ":")
	if !ok || tag == "" {
		t.Fatalf("%s=%s: not a tag of ghcr.io/kubebyon/kubebyon", nameEnv, name)
	}
	return archive, tag
}

// importImage imports an OCI archive into the node's containerd, where
// the CRI finds it (namespace k8s.io).
func importImage(t *testing.T, node *testenv.Node, archive string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	out, err := node.Command(ctx, "ctr", "-n", "k8s.io", "images", "import", archive).CombinedOutput()
	require.NoError(t, err, "ctr images import %s: %s", archive, out)
}

// fromNode runs curl in the node's network namespace and returns its
// HTTP status (0 when the request failed).
func fromNode(ctx context.Context, node *testenv.Node, url string) (int, string) {
	out, err := node.Command(ctx, "curl", "-sS", "-m", "3", "-o", "/dev/null", "-w", "%{http_code}", url).CombinedOutput()
	code, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, fmt.Sprintf("%v: %s", err, out)
	}
	return code, string(out)
}

// waitDeploymentReady waits until every replica of the Deployment is
// updated and Ready.
func waitDeploymentReady(t *testing.T, client kubernetes.Interface, ns, name string, timeout time.Duration) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		d, err = client.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if !assert.NoError(c, err) {
			return
		}
		want := *d.Spec.Replicas
		assert.Equal(c, d.Generation, d.Status.ObservedGeneration, name)
		assert.Equal(c, want, d.Status.UpdatedReplicas, "%s updated", name)
		assert.Equal(c, want, d.Status.ReadyReplicas, "%s ready", name)
		assert.Equal(c, want, d.Status.Replicas, "%s replicas (old ones gone)", name)
	}, timeout, 500*time.Millisecond, "%s: pods: %s", name, podStates(t, client, ns))
	return d
}

// logPods logs the end of the logs of the namespace's pods.
func logPods(t *testing.T, client kubernetes.Interface, ns string) {
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Logf("pods of %s: %v", ns, err)
		return
	}
	tail := int64(40)
	for _, p := range pods.Items {
		b, err := client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(context.Background())
		t.Logf("pod %s, its log's end (%v):\n%s", p.Name, err, b)
	}
}

// vclusterRepository serves a Helm HTTP chart repository holding the
// real vcluster chart (testenv.VClusterChart) at version, on the host's
// end of the node's link, where the platform's pods reach it (as an
// air-gapped install's mirror would be).
func vclusterRepository(t *testing.T, node *testenv.Node, version string) string {
	t.Helper()
	ch, err := loader.Load(testenv.VClusterChart(t))
	require.NoError(t, err)
	ch.Metadata.Version = version
	dir := t.TempDir()
	_, err = chartutil.Save(ch, dir)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", net.JoinHostPort(node.HostIP, "0"))
	require.NoError(t, err)
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	url := "http://" + ln.Addr().String()
	index, err := repo.IndexDirectory(dir, url)
	require.NoError(t, err)
	require.NoError(t, index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644))
	return url
}

// podStates describes the namespace's pods, for a failure's message.
// applyRouteAgent creates what deployments/route-agent/route-agent.yaml
// holds (its namespace, service account and DaemonSet), as kubectl apply
// would on a cluster that has none of them.
func applyRouteAgent(ctx context.Context, t *testing.T, client kubernetes.Interface, manifest string) {
	t.Helper()
	for _, doc := range strings.Split(manifest, "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		require.NoError(t, err, doc)
		switch o := obj.(type) {
		case *corev1.Namespace:
			_, err = client.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			_, err = client.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.DaemonSet:
			_, err = client.AppsV1().DaemonSets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("route-agent.yaml holds a %T this test does not create", obj)
		}
		require.NoError(t, err)
	}
}

func podStates(t *testing.T, client kubernetes.Interface, ns string) string {
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "\n%s %s", p.Name, p.Status.Phase)
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, " %s ready=%v restarts=%d waiting=%+v terminated=%+v", cs.Name, cs.Ready, cs.RestartCount, cs.State.Waiting, cs.State.Terminated)
		}
	}
	return b.String()
}

// TestChartOnRealNode installs the chart with Helm's SDK on a real control
// plane (kube-apiserver, kube-controller-manager, kube-scheduler) with a
// real node (kubelet, containerd, kube-proxy), the platform's image
// imported into it, and PostgreSQL on the host: the migrations hook Job
// runs once and completes, the API and worker pods become Ready, and the
// API Service answers /healthz from the node.
func TestChartOnRealNode(t *testing.T) {
	start := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	testenv.NodeToolsDir(t) // skips in -short mode, before the images are asked for
	archive, tag := image(t, "KUBEBYON_IMAGE", "KUBEBYON_IMAGE_ARCHIVE")
	nextArchive, nextTag := image(t, "KUBEBYON_IMAGE_NEXT", "KUBEBYON_IMAGE_ARCHIVE_NEXT")
	require.NotEqual(t, tag, nextTag, "the upgrade needs a second build")

	node := testenv.NewNode(t, testenv.NodeOptions{Name: "chart-node", HostAliases: []string{realNodeEndpoint}})
	// The kubernetes Service leads to the host's end of the node's link,
	// which pods reach (through kube-proxy's rules) for in-cluster config.
	cp := testenv.StartControlPlane(t, testenv.ControlPlaneOptions{SANs: []string{realNodeEndpoint}, AdvertiseAddress: node.HostIP})
	step("node and control plane up")
	testenv.JoinWithKubeadm(t, cp, node, realNodeEndpoint)
	step("node joined and Ready")
	node.StartKubeProxy(t, cp, "https://"+net.JoinHostPort(realNodeEndpoint, strconv.Itoa(cp.Port)))
	step("kube-proxy synced")
	importImage(t, node, archive)
	importImage(t, node, nextArchive)
	step("images imported")
	dbURL := testenv.NodePostgres(t, node)
	step("PostgreSQL up")

	ctx := t.Context()
	client := cp.Client(t)
	const ns = "kubebyon"
	t.Cleanup(func() {
		if t.Failed() {
			logPods(t, client, ns)
		}
	})
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	small := map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "32Mi"}, "limits": map[string]any{"memory": "512Mi"}}
	values := with(requiredValues(), map[string]any{
		"baseURL":    "http://kubebyon.test",
		"database":   map[string]any{"url": dbURL},
		"image":      map[string]any{"tag": tag, "pullPolicy": "Never"},
		"api":        map[string]any{"replicas": 2, "resources": small},
		"worker":     map[string]any{"replicas": 1, "resources": small},
		"migrations": map[string]any{"resources": small},
	})
	rel := install(t, cp.Config, ns, "kb", values)
	step("helm install done (migrations hook completed)")

	// The hook Job ran once, to completion, with one pod.
	jobs, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, jobs.Items, 1)
	job := jobs.Items[0]
	require.Equal(t, "kb-kubebyon-migrate", job.Name)
	require.True(t, complete(job), "%+v", job.Status)
	require.Equal(t, int32(1), job.Status.Succeeded)
	require.Zero(t, job.Status.Failed)
	require.Len(t, rel.Hooks, 2)

	api := waitDeploymentReady(t, client, ns, "kb-kubebyon-api", 4*time.Minute)
	step("API pods Ready")
	waitDeploymentReady(t, client, ns, "kb-kubebyon-worker", 2*time.Minute)
	step("worker pod Ready")
	// Only the hook migrated: the API serves without --migrate.
	require.Equal(t, []string{"serve", "--workers=false"}, api.Spec.Template.Spec.Containers[0].Args)
	require.Equal(t, "ghcr.io/kubebyon/kubebyon:"+tag, api.Spec.Template.Spec.Containers[0].Image)
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=migrate"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1, "one migrations pod")

	// The schema is there, in the host's PostgreSQL, written by the Job.
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	var users int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM users").Scan(&users))
	require.Zero(t, users)

	// The API Service answers from the node, through kube-proxy.
	svc, err := client.CoreV1().Services(ns).Get(ctx, "kb-kubebyon-api", metav1.GetOptions{})
	require.NoError(t, err)
	healthz := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "8080") + "/healthz"
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, out := fromNode(ctx, node, healthz)
		assert.Equal(c, 200, code, out)
	}, 30*time.Second, 500*time.Millisecond)
	step("API Service answers /healthz from the node")

	// A rolling upgrade to the second build: the migrations hook runs
	// again, the API pods are replaced one by one, and the Service answers
	// every request meanwhile.
	var (
		polls    atomic.Int64
		failures = make(chan string, 1000)
		stop     = make(chan struct{})
		polled   = make(chan struct{})
	)
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(150 * time.Millisecond):
			}
			code, out := fromNode(context.Background(), node, healthz)
			polls.Add(1)
			if code != 200 {
				select {
				case failures <- fmt.Sprintf("%s: %d %s", time.Now().Format(time.StampMilli), code, out):
				default:
				}
			}
		}
	}()
	upgrade(t, cp.Config, ns, "kb", with(values, map[string]any{"image": map[string]any{"tag": nextTag}}))
	step("helm upgrade done (migrations hook completed)")
	api = waitDeploymentReady(t, client, ns, "kb-kubebyon-api", 4*time.Minute)
	step("API pods replaced and Ready")
	// The old pods serve on through their preStop wait, then drain: the
	// requests go on until they are gone, and a moment more.
	require.Eventually(t, func() bool {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=api"})
		return err == nil && len(pods.Items) == 2
	}, time.Minute, 250*time.Millisecond, "the old API pods never went")
	step("old API pods gone")
	time.Sleep(2 * time.Second)
	close(stop)
	<-polled
	close(failures)
	var failed []string
	for f := range failures {
		failed = append(failed, f)
	}
	step(fmt.Sprintf("%d requests through the Service during the rollout, %d failed", polls.Load(), len(failed)))
	require.Empty(t, failed, "requests that failed during the rollout")
	require.Greater(t, polls.Load(), int64(20))
	require.Equal(t, "ghcr.io/kubebyon/kubebyon:"+nextTag, api.Spec.Template.Spec.Containers[0].Image)
	pods, err = client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=api"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 2)
	for _, p := range pods.Items {
		require.Equal(t, "ghcr.io/kubebyon/kubebyon:"+nextTag, p.Spec.Containers[0].Image, p.Name)
		require.Len(t, p.Status.ContainerStatuses, 1)
		require.True(t, p.Status.ContainerStatuses[0].Ready, p.Name)
		require.Contains(t, p.Status.ContainerStatuses[0].Image, nextTag, p.Name)
	}
	jobs, err = client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, jobs.Items, 1, "the hook Job made anew (before-hook-creation)")
	require.True(t, complete(jobs.Items[0]))
	require.Equal(t, "ghcr.io/kubebyon/kubebyon:"+nextTag, jobs.Items[0].Spec.Template.Spec.Containers[0].Image)
	waitDeploymentReady(t, client, ns, "kb-kubebyon-worker", 2*time.Minute)
	step("worker replaced and Ready")

	// The route agent from deployments/route-agent on the node reports to
	// the platform, installed as its README says: an admin makes an edge
	// token (here in an API pod, exec through the node's kubelet), the
	// manifest gets the platform's URL (the API Service's ClusterIP: no
	// cluster DNS here) and the image's tag, and the Secret the token.
	stdout, stderr, err := testenv.PodExec(ctx, cp.Config, ns, pods.Items[0].Name, "kubebyon", "admin", "edge-token", "--name", "route-agents")
	require.NoError(t, err, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	token := strings.TrimSpace(lines[len(lines)-1])
	require.NotEmpty(t, token, stdout)
	manifest, err := os.ReadFile("../route-agent/route-agent.yaml")
	require.NoError(t, err)
	applyRouteAgent(ctx, t, client, strings.NewReplacer(
		"https://kubebyon.example.com", "http://"+net.JoinHostPort(svc.Spec.ClusterIP, "8080"),
		"kubebyon/kubebyon:VERSION", "kubebyon/kubebyon:"+nextTag,
	).Replace(string(manifest)))
	_, err = client.CoreV1().Secrets("kubebyon-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "kubebyon-route-agent"},
		Data:       map[string][]byte{"token": []byte(token)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	step("route agent installed")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ds, err := client.AppsV1().DaemonSets("kubebyon-system").Get(ctx, "kubebyon-route-agent", metav1.GetOptions{})
		if assert.NoError(c, err) {
			assert.Equal(c, int32(1), ds.Status.NumberReady)
		}
		var reports int
		if assert.NoError(c, conn.QueryRow(ctx, "SELECT count(*) FROM route_agents WHERE node = $1 AND last_error = ''", node.Name).Scan(&reports)) {
			assert.Equal(c, 1, reports, "the route agent's report on %s", node.Name)
		}
	}, 2*time.Minute, 500*time.Millisecond, "pods: %s", podStates(t, client, "kubebyon-system"))
	step("the route agent on the node reported to the platform")

	// A cluster made through the chart's API: an admin made by
	// `kubebyon admin create` in an API pod, a write API key of theirs,
	// the host settings a cluster needs, and POST /api/v1/clusters from
	// the node through the Service. The platform's host cluster is this
	// control plane, reached in-cluster with the chart's service account
	// (no kubeconfig is set): the cluster's namespace and vcluster's
	// objects appear there (it never becomes Ready: no vcluster images).
	// The edge token's Secret changed the pods' checksum: new API pods.
	waitDeploymentReady(t, client, ns, "kb-kubebyon-api", 4*time.Minute)
	pods, err = client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=api"})
	require.NoError(t, err)
	var apiPod string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready {
			apiPod = p.Name
		}
	}
	require.NotEmpty(t, apiPod, podStates(t, client, ns))
	stdout, stderr, err = testenv.PodExec(ctx, cp.Config, ns, apiPod, "kubebyon", "admin", "create", "--email", "admin@kubebyon.test")
	require.NoError(t, err, stderr)
	require.Contains(t, stdout, "created admin admin@kubebyon.test")
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	var userID, orgID int64
	require.NoError(t, pool.QueryRow(ctx, "SELECT id FROM users WHERE email = $1", "admin@kubebyon.test").Scan(&userID))
	require.NoError(t, pool.QueryRow(ctx, "SELECT id FROM organizations WHERE personal_of = $1", userID).Scan(&orgID))
	key, err := (&apikeys.Service{Pool: pool}).Create(ctx, orgs.Acting{OrgID: orgID, UserID: userID}, "chart", apikeys.ScopeWrite,
		apikeys.Expiry{Choice: apikeys.ExpiryNever}, audit.Actor{UserID: userID, Email: "admin@kubebyon.test"})
	require.NoError(t, err)
	raw, err := config.DecodeSecretKey(testSecretKey)
	require.NoError(t, err)
	box, err := secrets.New(raw)
	require.NoError(t, err)
	rt := settings.Defaults()
	rt.APIBaseDomain = "clusters.test"
	rt.AllowedVersions = []string{"v1.34.2"}
	rt.ChartRepo, rt.ChartVersion = vclusterRepository(t, node, "1.0.0-chart-test"), "1.0.0-chart-test"
	require.NoError(t, settings.Save(ctx, queries.New(pool), box, rt))

	var created struct {
		ID   int64  `json:"id"`
		Slug string `json:"slug"`
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		out, err := node.Command(ctx, "curl", "-sS", "-m", "10", "-w", "\n%{http_code}", "-X", "POST",
			"-H", "Authorization: Bearer "+key.Value, "-H", "Content-Type: application/json",
			"-d", `{"name":"chart-made","kubernetes_version":"v1.34.2","public_access_mode":"nodeport"}`,
			"http://"+net.JoinHostPort(svc.Spec.ClusterIP, "8080")+"/api/v1/clusters").CombinedOutput()
		if !assert.NoError(c, err, "%s", out) {
			return
		}
		// The body, then the status on a line of its own (-w).
		i := strings.LastIndex(string(out), "\n")
		body, code := strings.TrimSpace(string(out[:max(i, 0)])), strings.TrimSpace(string(out[i+1:]))
		if assert.Equal(c, "201", code, body) {
			assert.NoError(c, json.Unmarshal([]byte(body), &created), body)
		}
	}, time.Minute, time.Second, "the settings reach the API pods")
	step(fmt.Sprintf("cluster %d (%s) created through the API Service", created.ID, created.Slug))
	require.NotEmpty(t, created.Slug)
	clusterNS := vcluster.Namespace(queries.Cluster{Slug: created.Slug})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := client.CoreV1().Namespaces().Get(ctx, clusterNS, metav1.GetOptions{})
		if !assert.NoError(c, err) {
			return
		}
		sts, err := client.AppsV1().StatefulSets(clusterNS).List(ctx, metav1.ListOptions{})
		if assert.NoError(c, err) {
			assert.NotEmpty(c, sts.Items, "vcluster's StatefulSet in %s", clusterNS)
		}
	}, 2*time.Minute, time.Second, "pods: %s", podStates(t, client, ns))
	step("the cluster's namespace and StatefulSet are on the host apiserver")
}
