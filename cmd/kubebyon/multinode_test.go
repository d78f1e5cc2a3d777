package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/internal/config"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/sessioncache"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/queries"
)

// multiNodeStep is the workers' cluster step in TestMultiNode: a killed
// worker's job goes to the other after it and River's 30-second grace
// (jobs.RescueStuckJobsAfter), where production waits 5½ minutes.
const multiNodeStep = 20 * time.Second

// TestMultiNode is the multi-node layout on one machine: `kubebyon migrate`
// once, two `serve --workers=false` and two `worker` processes of the real
// binary on one PostgreSQL and one secret key, the real kube-apiserver as
// the host with the real vcluster chart, and a second apiserver playing the
// virtual control plane. A cluster created through API process A is
// installed by the workers and read through B; worker A is killed (SIGKILL)
// in the middle of the cluster's first reconcile and worker B takes the job
// over within the rescue time; a join token made through B gives the join
// script through A and bootstraps a node; a drain asked of A is worked;
// the cluster deleted through B is gone through A; a sign-out through A
// is a sign-out on B at once.
//
// Worker A reaches the host through an address that accepts connections
// and never answers (a machine cut off from the host), so that it is
// certainly in the middle of the job when it is killed.
func TestMultiNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testenv.EmptyDBURL(t)
	key := strings.Repeat("A", 43) + "="
	base := []string{"DATABASE_URL=" + dbURL, "KUBEBYON_SECRET_KEY=" + key, "KUBEBYON_CLUSTER_STEP_TIMEOUT=" + multiNodeStep.String()}
	withEnv := func(extra ...string) []string {
		return append(append([]string{"KUBEBYON_DATA_DIR=" + t.TempDir()}, base...), extra...)
	}

	r := kubebyon(t, withEnv(), "", "migrate")
	require.Equal(t, 0, r.code, r.stderr)
	r = kubebyon(t, withEnv(), "correct horse battery staple\n", "admin", "create", "--email", "ops@example.com", "--password-stdin")
	require.Equal(t, 0, r.code, r.stderr)

	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	host := testenv.HostKube(t)
	hostKubeconfig := filepath.Join(t.TempDir(), "host.kubeconfig")
	require.NoError(t, os.WriteFile(hostKubeconfig, host.Kubeconfig(t), 0o600))
	saveHostSettings(t, pool, key)

	apiA := startServe(t, withEnv("KUBEBYON_KUBECONFIG="+hostKubeconfig), "--workers=false")
	apiB := startServe(t, withEnv("KUBEBYON_KUBECONFIG="+hostKubeconfig), "--workers=false")
	apiA.waitReady(t)
	apiB.waitReady(t)
	workerA := startWorker(t, withEnv("KUBEBYON_KUBECONFIG="+hangingKubeconfig(t, host)))

	// One sign-in, on A, is a session on B too (sessions live in
	// PostgreSQL; the cookie jar, like a browser behind one name, sends
	// the cookie to both). The API key is made on B.
	c := newConsole(t)
	c.signIn(t, apiA, "ops@example.com", "correct horse battery staple")
	apiKey := c.createAPIKey(t, apiB)

	var created struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
	}
	code := apiCall(t, apiA, apiKey, http.MethodPost, "/api/v1/clusters", `{"name":"multi","kubernetes_version":"v1.34.0","public_access_mode":"nodeport"}`, &created)
	require.Equal(t, http.StatusCreated, code)
	cl, err := queries.New(pool).ClusterGetByID(ctx, created.ID)
	require.NoError(t, err)

	// Worker A takes the reconcile and waits on its host.
	var jobID int64
	require.Eventually(t, func() bool {
		err := pool.QueryRow(ctx, `SELECT j.id FROM river_job j JOIN clusters c ON c.reconcile_lease_job = j.id
			WHERE c.id = $1 AND j.state = 'running' AND j.attempt = 1`, cl.ID).Scan(&jobID)
		return err == nil
	}, time.Minute, 50*time.Millisecond, "worker A is at work on the cluster: %s", workerA.logs)
	workerB := startWorker(t, withEnv("KUBEBYON_KUBECONFIG="+hostKubeconfig))
	workerB.waitReady(t)
	require.NoError(t, workerA.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	<-workerA.done

	// River's rescuer, on worker B once it leads, hands the job over after
	// the step and the grace; its rescue runs every 30 seconds. A minute
	// more covers B taking the lead from the dead A and a busy machine.
	handOver := multiNodeStep + 30*time.Second + 30*time.Second + time.Minute
	hostClient := host.Client(t)
	ns := vcluster.Namespace(cl)
	require.Eventually(t, func() bool {
		_, err := hostClient.AppsV1().StatefulSets(ns).Get(ctx, "multi", metav1.GetOptions{})
		return err == nil
	}, handOver, 200*time.Millisecond, "worker B installs the chart: %s", workerB.logs)
	t.Logf("worker B took the job over %s after worker A was killed", time.Since(killed).Round(time.Second))
	var rescued bool
	var attempts int
	require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM unnest(errors) e WHERE e->>'error' = 'Stuck job rescued by JobRescuer'),
		cardinality(attempted_by) FROM river_job WHERE id = $1`, jobID).Scan(&rescued, &attempts))
	require.True(t, rescued, "River's rescuer took the dead worker's job back")
	require.GreaterOrEqual(t, attempts, 2, "the same job, run again by worker B")

	// Play the control plane: the StatefulSet is ready and vcluster wrote
	// its kubeconfig, for a second apiserver. Worker B marks the cluster
	// ready, as API process B says.
	virt := testenv.NewKube(t)
	sts, err := hostClient.AppsV1().StatefulSets(ns).Get(ctx, "multi", metav1.GetOptions{})
	require.NoError(t, err)
	sts.Status.Replicas, sts.Status.ReadyReplicas = 1, 1
	_, err = hostClient.AppsV1().StatefulSets(ns).UpdateStatus(ctx, sts, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = hostClient.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: vcluster.KubeconfigSecretName(cl), Namespace: ns},
		Data:       map[string][]byte{"config": virt.Kubeconfig(t)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var shown struct {
		Status   string `json:"status"`
		Endpoint string `json:"endpoint"`
	}
	require.Eventually(t, func() bool {
		code := apiCall(t, apiB, apiKey, http.MethodGet, fmt.Sprintf("/api/v1/clusters/%d", cl.ID), "", &shown)
		return code == http.StatusOK && shown.Status == "ready"
	}, time.Minute, 200*time.Millisecond, "the cluster is ready, through API process B: %s", workerB.logs)
	require.Equal(t, cl.Slug+".clusters.test", shown.Endpoint)

	// A join token made through B; its join script through A.
	token := c.createJoinToken(t, apiB, cl.ID)
	resp, err := http.Get("http://" + apiA.addr + "/join/" + token)
	require.NoError(t, err)
	script := readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, script)
	require.Empty(t, resp.Header.Get("X-KubeBYON-Join-Refused"), script)
	require.Equal(t, "text/x-shellscript; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Contains(t, script, shown.Endpoint)
	require.Contains(t, script, strings.TrimSpace(string(virt.CA)), "the script pins the cluster's CA")

	// The node bootstraps as kubelet does: its CSR filed with the token
	// is recorded by a worker's join token sync, and shown through A.
	virt.KubeadmBootstrapBinding(t, jointokens.NodeGroup)
	require.NoError(t, testenv.FileNodeCSR(t, virt.TokenClient(t, token), "node-1"))
	tokensPage := fmt.Sprintf("/clusters/%d/tokens", cl.ID)
	require.Eventually(t, func() bool {
		_, body := c.get(t, apiA, tokensPage)
		return strings.Contains(body, `data-registered="false">node-1<`)
	}, 2*time.Minute, 500*time.Millisecond, "the join is recorded: %s", workerB.logs)

	// kubelet registers the Node; a drain asked of A is worked by B.
	_, err = virt.Client(t).CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var op struct {
		ID     int64  `json:"id"`
		Kind   string `json:"kind"`
		Status string `json:"status"`
	}
	code = apiCall(t, apiA, apiKey, http.MethodPost, fmt.Sprintf("/api/v1/clusters/%d/nodes/node-1/drain", cl.ID), "", &op)
	require.Equal(t, http.StatusAccepted, code)
	require.Equal(t, "drain", op.Kind)
	require.Eventually(t, func() bool {
		var status string
		err := pool.QueryRow(ctx, "SELECT status FROM node_operations WHERE id = $1", op.ID).Scan(&status)
		return err == nil && status == "succeeded"
	}, time.Minute, 200*time.Millisecond, "worker B drains the node: %s", workerB.logs)
	var listed struct {
		Nodes []struct {
			Name          string `json:"name"`
			Unschedulable bool   `json:"unschedulable"`
		} `json:"nodes"`
	}
	code = apiCall(t, apiB, apiKey, http.MethodGet, fmt.Sprintf("/api/v1/clusters/%d/nodes", cl.ID), "", &listed)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, listed.Nodes, 1)
	require.True(t, listed.Nodes[0].Unschedulable, "the drained node is cordoned, as B reads it")

	// Deleted through B: the worker uninstalls it and asks for the
	// namespace to go; the test plays the namespace controller; A no
	// longer shows it.
	code = apiCall(t, apiB, apiKey, http.MethodDelete, fmt.Sprintf("/api/v1/clusters/%d", cl.ID), "", nil)
	require.Equal(t, http.StatusAccepted, code)
	require.Eventually(t, func() bool {
		n, err := hostClient.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err == nil && n.DeletionTimestamp != nil
	}, time.Minute, 200*time.Millisecond, "worker B asks for the namespace to go: %s", workerB.logs)
	n, err := hostClient.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	n.Spec.Finalizers = nil
	_, err = hostClient.CoreV1().Namespaces().Finalize(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return apiCall(t, apiA, apiKey, http.MethodGet, fmt.Sprintf("/api/v1/clusters/%d", cl.ID), "", nil) == http.StatusNotFound
	}, time.Minute, 200*time.Millisecond, "the cluster is deleted, as A says: %s", workerB.logs)

	// Signed out through A, the browser's session ends on B too: B keeps
	// a session it read for up to sessioncache.TTL, and forgets it as soon
	// as the database tells it of the sign-out. The old cookie, sent again
	// (as a thief would), is refused by B well within that time.
	code, _ = c.get(t, apiB, "/clusters")
	require.Equal(t, http.StatusOK, code, "B serves the session, and keeps it")
	cookies := c.http.Jar.Cookies(&url.URL{Scheme: "http", Host: apiB.addr})
	signOut, body := c.post(t, apiA, "/clusters", "/logout", url.Values{})
	require.Equal(t, http.StatusSeeOther, signOut.StatusCode, body)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	require.Eventually(t, func() bool {
		req, err := http.NewRequest(http.MethodGet, "http://"+apiB.addr+"/clusters", nil)
		require.NoError(t, err)
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		readAll(t, resp)
		return resp.StatusCode == http.StatusSeeOther && strings.HasPrefix(resp.Header.Get("Location"), "/login")
	}, sessioncache.TTL-time.Second, 20*time.Millisecond, "B refuses the session signed out through A")

	workerB.stop(t)
	apiA.stop(t)
	apiB.stop(t)
}

// saveHostSettings points the platform at the test host: its NodePorts,
// an API base domain, the versions offered and the vcluster chart from the
// module cache.
func saveHostSettings(t *testing.T, pool *pgxpool.Pool, key string) {
	t.Helper()
	raw, err := config.DecodeSecretKey(key)
	require.NoError(t, err)
	box, err := secrets.New(raw)
	require.NoError(t, err)
	rt := settings.Defaults()
	rt.NodePortMin, rt.NodePortMax = testenv.NodePorts()
	rt.APIBaseDomain = "clusters.test"
	rt.AllowedVersions = []string{"v1.34.0"}
	rt.ChartPath = testenv.VClusterChart(t)
	require.NoError(t, settings.Save(context.Background(), queries.New(pool), box, rt))
}

// hangingKubeconfig is the host's kubeconfig with its server an address
// that accepts connections and never answers.
func hangingKubeconfig(t *testing.T, host *testenv.Kube) string {
	t.Helper()
	addr := testenv.HangingListener(t)
	cfg, err := clientcmd.Load(host.Kubeconfig(t))
	require.NoError(t, err)
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + addr
	}
	path := filepath.Join(t.TempDir(), "hanging.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// worker is a running `kubebyon worker`.
type worker struct {
	cmd         *exec.Cmd
	metricsAddr string
	logs        *testenv.Output
	done        chan error
}

func startWorker(t *testing.T, env []string) *worker {
	t.Helper()
	w := &worker{metricsAddr: freeAddr(t), logs: &testenv.Output{}, done: make(chan error, 1)}
	w.cmd = exec.Command(binary, "worker", "--metrics-listen", w.metricsAddr)
	w.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	w.cmd.Stdout, w.cmd.Stderr = w.logs, w.logs
	require.NoError(t, w.cmd.Start())
	go func() {
		w.done <- w.cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill()
		<-w.done
		if t.Failed() {
			t.Logf("worker %d:\n%s", w.cmd.Process.Pid, w.logs)
		}
	})
	return w
}

// waitReady polls the worker's /readyz.
func (w *worker) waitReady(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + w.metricsAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 100*time.Millisecond, "worker ready: %s", w.logs)
}

// stop sends SIGTERM and expects a clean exit.
func (w *worker) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-w.done:
		require.NoError(t, err, "worker did not exit cleanly: %s", w.logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("worker did not stop after SIGTERM: %s", w.logs)
	}
}

// console is a browser: one cookie jar for every API process.
type console struct{ http *http.Client }

func newConsole(t testing.TB) *console {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &console{http: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

var (
	csrfField   = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)
	formIDField = regexp.MustCompile(`name="form_id" value="([^"]+)"`)
	newAPIKey   = regexp.MustCompile(`id="new-api-key"[^>]* value="(kbn_[a-z2-7]{8}_[a-z2-7]{32})"`)
	joinCommand = regexp.MustCompile(`/join/([a-z0-9]{6}\.[a-z0-9]{16}) \| sudo sh`)
)

func (c *console) get(t testing.TB, s *server, path string) (int, string) {
	t.Helper()
	resp, err := c.http.Get("http://" + s.addr + path)
	require.NoError(t, err)
	return resp.StatusCode, readAll(t, resp)
}

// post submits a form with the CSRF token of the page it is on.
func (c *console) post(t testing.TB, s *server, page, path string, form url.Values) (*http.Response, string) {
	t.Helper()
	_, body := c.get(t, s, page)
	return c.submit(t, s, body, path, form)
}

// submit submits a form of a page already loaded, with its CSRF token.
func (c *console) submit(t testing.TB, s *server, page, path string, form url.Values) (*http.Response, string) {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	require.NotNil(t, m, "no CSRF token on the page for %s", path)
	form.Set("_csrf", m[1])
	resp, err := c.http.PostForm("http://"+s.addr+path, form)
	require.NoError(t, err)
	return resp, readAll(t, resp)
}

func (c *console) signIn(t testing.TB, s *server, email, password string) {
	t.Helper()
	resp, body := c.post(t, s, "/login", "/login", url.Values{"email": {email}, "password": {password}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
}

func (c *console) createAPIKey(t testing.TB, s *server) string {
	t.Helper()
	_, page := c.get(t, s, "/settings/api-keys")
	m := formIDField.FindStringSubmatch(page)
	require.NotNil(t, m, "signed in on this process too: %s", page)
	resp, body := c.submit(t, s, page, "/settings/api-keys", url.Values{"name": {"multi-node"}, "scope": {"write"}, "expiry": {"never"}, "form_id": {m[1]}})
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	k := newAPIKey.FindStringSubmatch(body)
	require.NotNil(t, k, body)
	return k[1]
}

func (c *console) createJoinToken(t testing.TB, s *server, clusterID int64) string {
	t.Helper()
	page := fmt.Sprintf("/clusters/%d/tokens", clusterID)
	resp, body := c.post(t, s, page, page, url.Values{"description": {"rack 1"}, "lifetime": {"24h"}, "uses": {"1"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	_, body = c.get(t, s, page)
	m := joinCommand.FindStringSubmatch(body)
	require.NotNil(t, m, body)
	return m[1]
}

// apiCall calls the JSON API with an API key and decodes a 2xx answer
// into out.
func apiCall(t testing.TB, s *server, key, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.addr+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw := readAll(t, resp)
	if resp.StatusCode/100 == 2 && out != nil {
		require.NoError(t, json.Unmarshal([]byte(raw), out), raw)
	}
	return resp.StatusCode
}

func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err := io.Copy(&b, resp.Body)
	require.NoError(t, err)
	return b.String()
}
