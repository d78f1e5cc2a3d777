package singlenode_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

// hostFromContainer is the name podman gives the host in a container's
// /etc/hosts on its default bridge network: the bridge's gateway
// (10.88.0.1), where the test's kube-apiserver listens too.
const hostFromContainer = "host.containers.internal"

// chartInContainer is where the test mounts the vcluster chart: the
// container has no internet, so the admin names a local chart, as an
// air-gapped install does.
const chartInContainer = "/charts/vcluster"

// TestImageRunsWithPodman runs the single-node image ($KUBEBYON_IMAGE) as
// its README says, with podman, a published port and a named volume for
// /data, and uses it as an admin would: healthy over the published port;
// an admin made with `kubebyon admin create` signs in through the console;
// with a host cluster (a real control plane on the host, its kubeconfig
// mounted) and the vcluster chart mounted, the admin creates a cluster
// and the serve process's own worker installs it on the host; the
// container stops within podman's 10 s grace with PostgreSQL shut down
// cleanly, starts again with the session, the account and the cluster
// kept in the volume; and podman's health check of the image says healthy.
func TestImageRunsWithPodman(t *testing.T) {
	podman := testenv.Podman(t)
	image := testenv.Image(t)
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, podman, args...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		require.NoError(t, err, "podman %s: %s", strings.Join(args, " "), out)
		return out
	}

	// The host cluster, reachable from the container's network: on every
	// address of the host, with the name the container knows the host by
	// in its certificate.
	cp := testenv.StartControlPlane(t, testenv.ControlPlaneOptions{
		BindAddress: "0.0.0.0",
		SANs:        []string{hostFromContainer, "10.88.0.1"},
	})
	kubeconfig, err := clientcmd.Load(cp.AdminKubeconfig)
	require.NoError(t, err)
	for _, c := range kubeconfig.Clusters {
		c.Server = "https://" + net.JoinHostPort(hostFromContainer, strconv.Itoa(cp.Port))
	}
	kubeconfigFile := filepath.Join(t.TempDir(), "kubeconfig")
	raw, err := clientcmd.Write(*kubeconfig)
	require.NoError(t, err)
	// Readable by the image's user 10001.
	require.NoError(t, os.WriteFile(kubeconfigFile, raw, 0o644))
	require.NoError(t, os.Chmod(kubeconfigFile, 0o644))
	chart := testenv.VClusterChart(t)

	suffix := make([]byte, 4)
	_, err = rand.Read(suffix)
	require.NoError(t, err)
	name := fmt.Sprintf("kubebyon-test-%d-%s", os.Getpid(), hex.EncodeToString(suffix))
	volume := name + "-data"
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command(podman, "logs", "--tail", "60", name).CombinedOutput()
			t.Logf("the container's log, its end:\n%s", logs)
		}
		if out, err := exec.Command(podman, "rm", "--force", "--time", "0", name).CombinedOutput(); err != nil {
			t.Logf("podman rm %s: %v %s", name, err, out)
		}
		if out, err := exec.Command(podman, "volume", "rm", "--force", volume).CombinedOutput(); err != nil {
			t.Logf("podman volume rm %s: %v %s", volume, err, out)
		}
	})

	// 1. podman run, and the time until /healthz answers through the
	// published port. A port found free may be taken before podman binds
	// it: another one then.
	var (
		base       string
		runStarted time.Time
	)
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		base = fmt.Sprintf("http://127.0.0.1:%d", port)
		runStarted = time.Now()
		out, err := run("run", "--detach", "--name", name,
			"--publish", fmt.Sprintf("127.0.0.1:%d:8080", port),
			"--volume", volume+":/data",
			"--volume", kubeconfigFile+":/etc/kubebyon/kubeconfig:ro",
			"--volume", chart+":"+chartInContainer+":ro",
			"--env", "KUBEBYON_BASE_URL="+base,
			"--env", "KUBEBYON_KUBECONFIG=/etc/kubebyon/kubeconfig",
			image)
		if err == nil {
			break
		}
		_, _ = run("rm", "--force", name)
		if attempt == 3 || !strings.Contains(out, "address already in use") {
			require.NoError(t, err, "podman run: %s", out)
		}
	}
	waitHealthy(t, base)
	runToHealthz := time.Since(runStarted)
	t.Logf("podman run to /healthz 200: %v", runToHealthz)
	fmt.Printf("IMAGE-FIGURE run-to-healthz: %d ms\n", runToHealthz.Milliseconds())

	// 2. The first admin, from the command line in the container, signs
	// in through the console and sets a password of their own, as the
	// printed one asks.
	out := must("exec", name, "kubebyon", "admin", "create", "--email", "admin@example.com")
	m := regexp.MustCompile(`(?m)^password \(shown once[^)]*\): (\S+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, "kubebyon admin create printed no password: %s", out)
	w := newBrowser(t, base)
	resp, body := w.post("/login", "/login", url.Values{"email": {"admin@example.com"}, "password": {m[1]}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	require.NotContains(t, resp.Header.Get("Location"), "/login")
	code, loc, _ := w.get("/clusters")
	require.Equal(t, http.StatusSeeOther, code, "a given password must be changed first")
	require.Equal(t, "/settings/profile#password-section", loc)
	code, _, body = w.get("/settings/profile")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "admin@example.com", "the signed-in page shows the account")
	resp, body = w.post("/settings/profile", "/settings/password", url.Values{
		"current_password": {m[1]}, "new_password": {"podman test admin password"},
	})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	code, _, _ = w.get("/clusters")
	require.Equal(t, http.StatusOK, code, "signed in with a password of their own")

	// 3. The admin sets the API base domain and the chart the container
	// has (the host comes from KUBEBYON_KUBECONFIG), then creates a
	// cluster; serve's own worker installs it on the host.
	resp, body = w.post("/admin/settings", "/admin/settings", url.Values{
		"chartRepo": {"https://charts.loft.sh"}, "chartVersion": {"0.30.0"}, "chartPath": {chartInContainer},
		"defaultAccessMode": {"nodeport"}, "edgeAddressType": {"InternalIP"}, "apiBaseDomain": {"clusters.test"},
		"podCIDR": {"10.244.0.0/16"}, "serviceCIDR": {"10.96.0.0/16"},
		"podCIDRPool": {"10.128.0.0/9"}, "podCIDRBlock": {"20"}, "allowedVersions": {"v1.34.0"},
		"nodePortMin": {"30000"}, "nodePortMax": {"32767"}, "backend": {"vcluster"}, "publicAPIPort": {"443"},
	})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	resp, body = w.post("/clusters/new", "/clusters", url.Values{
		"name": {"podman"}, "kubernetes_version": {"v1.34.0"}, "public_access_mode": {"nodeport"},
	})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	clusterPage := resp.Header.Get("Location")
	require.Regexp(t, `^/clusters/\d+$`, clusterPage)
	host := cp.Client(t)
	var namespace string
	require.Eventually(t, func() bool {
		list, err := host.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, s := range list.Items {
			if s.Name == "podman" && strings.HasPrefix(s.Namespace, "kubebyon-") {
				namespace = s.Namespace
				return true
			}
		}
		return false
	}, 2*time.Minute, 500*time.Millisecond, "the worker in the container installs the cluster's chart on the host")
	secrets, err := host.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=podman"})
	require.NoError(t, err)
	require.NotEmpty(t, secrets.Items, "Helm recorded the release on the host")
	code, _, body = w.get(clusterPage)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "podman")

	// 4. podman stop: serve drains, stops its workers and PostgreSQL,
	// and exits 0 within the grace, before podman would kill it.
	stopStarted := time.Now()
	must("stop", "--time", "10", name)
	stopTook := time.Since(stopStarted)
	t.Logf("podman stop took %v", stopTook)
	require.Less(t, stopTook, 10*time.Second, "the container stops before podman's grace runs out")
	require.Equal(t, "0", must("inspect", "--format", "{{.State.ExitCode}}", name), "a clean stop exits 0")
	logs := must("logs", name)
	require.Contains(t, logs, "embedded PostgreSQL stopped")
	require.NotContains(t, logs, "did not stop in time")

	// 5. podman start: healthy again, the old session still signed in,
	// the cluster still listed, and PostgreSQL found its data shut down
	// cleanly (no crash recovery).
	startStarted := time.Now()
	must("start", name)
	waitHealthy(t, base)
	t.Logf("podman start to /healthz 200: %v", time.Since(startStarted))
	code, loc, body = w.get("/clusters")
	require.Equal(t, http.StatusOK, code, "the session kept in the volume still signs the admin in (redirected to %q)", loc)
	require.Contains(t, body, clusterPage, "the cluster is still listed")
	pglog := must("exec", name, "cat", "/data/postgres/postgres.log")
	require.Contains(t, pglog, "database system is shut down")
	require.Equal(t, 2, strings.Count(pglog, "database system was shut down at"), "both starts found a clean shutdown:\n%s", pglog)
	require.NotContains(t, pglog, "automatic recovery in progress")

	// 6. The image's health check: no systemd runs podman's timer here,
	// so the test runs it, and podman records the result.
	if out, err := run("healthcheck", "run", name); err != nil {
		format, _ := run("image", "inspect", "--format", "{{.ManifestType}}", image)
		t.Fatalf("podman healthcheck run: %v: %s (an image in OCI's format has no HEALTHCHECK: make image builds "+
			"Docker's format; %s is %s)", err, out, image, format)
	}
	require.Equal(t, "healthy", must("inspect", "--format", "{{.State.Health.Status}}", name))
	t.Logf("the whole test took %v", time.Since(started))
}

// freePort is a TCP port free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitHealthy waits until base's /healthz answers 200.
func waitHealthy(t *testing.T, base string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	require.Eventually(t, func() bool {
		resp, err := client.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 2*time.Minute, 50*time.Millisecond, "%s/healthz answers 200", base)
}

// browser is a browser without JavaScript on the platform: it keeps
// cookies and does not follow redirects.
type browser struct {
	t    *testing.T
	base string
	http *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, base: base, http: &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (b *browser) do(req *http.Request) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.http.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp, string(body)
}

// get fetches a page: its status, where it redirects, and its body.
func (b *browser) get(path string) (int, string, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.base+path, nil)
	require.NoError(b.t, err)
	resp, body := b.do(req)
	return resp.StatusCode, resp.Header.Get("Location"), body
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// post submits form from page with the CSRF token page carries.
func (b *browser) post(page, path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	code, _, body := b.get(page)
	require.Equal(b.t, http.StatusOK, code, "GET %s", page)
	m := csrfField.FindStringSubmatch(body)
	require.NotNil(b.t, m, "no CSRF token on %s", page)
	form.Set("_csrf", m[1])
	req, err := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}
