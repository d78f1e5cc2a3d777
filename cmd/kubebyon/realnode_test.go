//go:build linux

package main_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/internal/config"
	"github.com/kubebyon/kubebyon/internal/kamaji"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/queries"
)

// The real-node tests: the platform as users run it (kubebyon serve with
// its workers and the embedded HAProxy edge), clusters on the Kamaji
// backend, and real machines (testenv.NewNode: kubelet, containerd, runc
// and kubeadm in namespaces of their own) that join with the command the
// console shows, through the edge, by the clusters' host names.
//
// What plays Kamaji (its operator has no image here): kamajiPlayer starts
// a real control plane (kube-apiserver, kube-controller-manager,
// kube-scheduler: testenv.StartControlPlane) for each TenantControlPlane
// the platform writes, on the port and with the names the object asks
// for, and writes the status and the admin kubeconfig Secret as Kamaji
// would. It does not run Kamaji's kubeadm phases: what kubeadm join needs
// in the control plane is what the platform's reconcile makes
// (internal/kubeadm), which is what these tests prove. The admin.conf it
// writes names the address the test process reaches the control plane at
// (Kamaji's names the public host name, which only the machines resolve
// here); the kubeconfig users download names the public endpoint either
// way.

// platformName is the platform's host name in its base URL, which the
// machines resolve to the host.
const platformName = "kubebyon.test"

// realPlatform is a running platform with the edge, for real nodes.
type realPlatform struct {
	*server
	pool     *pgxpool.Pool
	port     int
	edgePort int
	base     string // http://kubebyon.test:port
	dyn      dynamic.Interface
	host     kubernetes.Interface
}

// startRealPlatform starts kubebyon serve with its workers and the
// embedded edge on all the host's addresses, the Kamaji backend, the
// public API port the edge's, the admin's package mirror packageMirror
// (pkgs.k8s.io if empty), and a Ready host node at 127.0.0.1 (the control
// planes' NodePorts are served there).
func startRealPlatform(t testing.TB, packageMirror string) *realPlatform {
	t.Helper()
	ctx := context.Background()
	dbURL := testenv.EmptyDBURL(t)
	key := strings.Repeat("B", 43) + "="
	env := []string{"DATABASE_URL=" + dbURL, "KUBEBYON_SECRET_KEY=" + key, "KUBEBYON_DATA_DIR=" + t.TempDir(), "KUBEBYON_NODE_ALERT_AFTER=10s"}
	r := kubebyon(t, env, "", "migrate")
	require.Equal(t, 0, r.code, r.stderr)
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	host := testenv.HostKube(t)
	testenv.KamajiCRD(t, host)
	hostClient := host.Client(t)
	hostNode := "realnode-host-" + strings.ToLower(strconv.FormatInt(time.Now().UnixNano()%1e9, 36))
	_, err = hostClient.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: hostNode}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = hostClient.CoreV1().Nodes().Delete(context.Background(), hostNode, metav1.DeleteOptions{}) })
	n, err := hostClient.CoreV1().Nodes().Get(ctx, hostNode, metav1.GetOptions{})
	require.NoError(t, err)
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	_, err = hostClient.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	hostKubeconfig := filepath.Join(t.TempDir(), "host.kubeconfig")
	require.NoError(t, os.WriteFile(hostKubeconfig, host.Kubeconfig(t), 0o600))

	p := &realPlatform{pool: pool, port: freePort(t), edgePort: freePort(t), host: hostClient}
	p.base = fmt.Sprintf("http://%s:%d", platformName, p.port)
	p.dyn, err = dynamic.NewForConfig(host.Config)
	require.NoError(t, err)

	raw, err := config.DecodeSecretKey(key)
	require.NoError(t, err)
	box, err := secrets.New(raw)
	require.NoError(t, err)
	rt := settings.Defaults()
	rt.NodePortMin, rt.NodePortMax = testenv.NodePorts()
	rt.APIBaseDomain = "clusters.test"
	rt.AllowedVersions = []string{"v1.34.2"}
	rt.Backend = settings.BackendKamaji
	rt.PublicAPIPort = p.edgePort
	rt.PackageMirror = packageMirror
	require.NoError(t, settings.Save(ctx, queries.New(pool), box, rt))

	s := &server{addr: fmt.Sprintf("127.0.0.1:%d", p.port), metricsAddr: freeAddr(t), stderr: &testenv.Output{}, done: make(chan error, 1)}
	s.cmd = exec.Command(binary, "serve", "--listen", fmt.Sprintf("0.0.0.0:%d", p.port), "--metrics-listen", s.metricsAddr)
	s.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	s.cmd.Env = append(s.cmd.Env, "KUBEBYON_KUBECONFIG="+hostKubeconfig, "KUBEBYON_BASE_URL="+p.base,
		"KUBEBYON_EDGE=embedded", "KUBEBYON_EDGE_HAPROXY="+testenv.HAProxy(t),
		fmt.Sprintf("KUBEBYON_EDGE_API_LISTEN=0.0.0.0:%d", p.edgePort), "KUBEBYON_EDGE_KONNECTIVITY_LISTEN=0.0.0.0:"+strconv.Itoa(freePort(t)))
	s.cmd.Stderr = s.stderr
	require.NoError(t, s.cmd.Start())
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("serve:\n%s", s.stderr)
		}
	})
	p.server = s
	s.waitReady(t)
	return p
}

// freePort is a port nothing listens on, on every address.
func freePort(t testing.TB) int {
	t.Helper()
	return unusedPort(t, "0.0.0.0")
}

// kamajiPlayer plays Kamaji for one TenantControlPlane (see the top of
// this file): it waits for the platform to write it, starts a real
// control plane as asked, and reports it ready.
func (p *realPlatform) kamajiPlayer(t testing.TB, c queries.Cluster) *testenv.ControlPlane {
	t.Helper()
	ctx := context.Background()
	ns := vcluster.Namespace(c)
	var tcp *kamaji.TenantControlPlane
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		var err error
		tcp, err = kamaji.Get(ctx, p.dyn, ns, kamaji.Name(c))
		assert.NoError(ct, err)
	}, 2*time.Minute, 200*time.Millisecond, "the platform writes the TenantControlPlane: %s", p.stderr)
	ingressHost, _, err := net.SplitHostPort(tcp.Spec.ControlPlane.Ingress.Hostname)
	require.NoError(t, err)
	sans := append([]string{ingressHost, tcp.Spec.NetworkProfile.Address}, tcp.Spec.NetworkProfile.CertSANs...)
	cp := testenv.StartControlPlane(t, testenv.ControlPlaneOptions{Port: int(tcp.Spec.NetworkProfile.Port), SANs: sans})

	_, err = p.host.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: kamaji.AdminKubeconfigSecret(c), Namespace: ns},
		Data:       map[string][]byte{kamaji.AdminKubeconfigKey: cp.AdminKubeconfig},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	tcp.Status.Kubernetes.Version = kamaji.VersionStatus{Version: tcp.Spec.Kubernetes.Version, Status: kamaji.VersionReady}
	tcp.Status.Kubernetes.Deployment = kamaji.DeploymentStatus{Replicas: 1, ReadyReplicas: 1}
	tcp.Status.KubeConfig.Admin.SecretName = kamaji.AdminKubeconfigSecret(c)
	tcp.Status.ControlPlaneEndpoint = tcp.Spec.ControlPlane.Ingress.Hostname
	u, err := kamaji.Unstructured(tcp)
	require.NoError(t, err)
	_, err = p.dyn.Resource(kamaji.TenantControlPlanes).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	require.NoError(t, err)
	return cp
}

// userConsole is a signed-in user's browser, reaching the platform by
// its name.
func (p *realPlatform) userConsole(t testing.TB, email string) *console {
	t.Helper()
	r := kubebyon(t, []string{"DATABASE_URL=" + p.dbURL(t), "KUBEBYON_SECRET_KEY=" + strings.Repeat("B", 43) + "=", "KUBEBYON_DATA_DIR=" + t.TempDir()},
		"a long enough password\n", "admin", "create", "--email", email, "--password-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	c := newConsole(t)
	c.signIn(t, p.server, email, "a long enough password")
	return c
}

func (p *realPlatform) dbURL(t testing.TB) string {
	t.Helper()
	return p.pool.Config().ConnString()
}

var clusterLink = regexp.MustCompile(`^/clusters/(\d+)$`)

// nodeStatus is the status a cluster's nodes page shows a node in: its
// badge's data-status and text.
func nodeStatus(page, node string) (status, text string) {
	re := regexp.MustCompile(`data-node="` + regexp.QuoteMeta(node) + `".*?data-status="([^"]*)" data-testid="node-status">([^<]*)<`)
	if m := re.FindStringSubmatch(page); m != nil {
		return m[1], m[2]
	}
	return "", ""
}

// createCluster submits the console's create form and waits until the
// cluster is ready, playing Kamaji meanwhile.
func (p *realPlatform) createCluster(t testing.TB, c *console, name string) (queries.Cluster, *testenv.ControlPlane) {
	t.Helper()
	ctx := context.Background()
	resp, body := c.post(t, p.server, "/clusters/new", "/clusters", url.Values{"name": {name}, "kubernetes_version": {"v1.34.2"}, "public_access_mode": {"nodeport"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	m := clusterLink.FindStringSubmatch(resp.Header.Get("Location"))
	require.NotNil(t, m, resp.Header.Get("Location"))
	id, _ := strconv.ParseInt(m[1], 10, 64)
	cl, err := queries.New(p.pool).ClusterGetByID(ctx, id)
	require.NoError(t, err)
	require.Equal(t, settings.BackendKamaji, cl.Backend)
	cp := p.kamajiPlayer(t, cl)
	require.Eventually(t, func() bool {
		cl, err = queries.New(p.pool).ClusterGetByID(ctx, id)
		return err == nil && cl.Status == "ready"
	}, 2*time.Minute, 200*time.Millisecond, "the cluster becomes ready: %s", p.stderr)
	return cl, cp
}

// join runs the join command the console shows for a new token in the
// machine (joinCommand), and returns the token and the command's output.
func (p *realPlatform) join(t testing.TB, c *console, cl queries.Cluster, node *testenv.Node, extra ...string) (string, string) {
	t.Helper()
	token := c.createJoinToken(t, p.server, cl.ID)
	_, page := c.get(t, p.server, fmt.Sprintf("/clusters/%d/tokens", cl.ID))
	require.Contains(t, page, "curl -fsSL "+p.base+"/join/"+token+" | sudo sh", "the console shows the command")
	return token, p.runJoin(t, node, token, extra...)
}

// runJoin runs the join command of token in the machine, and returns its
// output.
func (p *realPlatform) runJoin(t testing.TB, node *testenv.Node, token string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := p.joinCommand(ctx, node, token, extra...).CombinedOutput()
	require.NoError(t, err, "the join command:\n%s", b)
	return string(b)
}

// joinCommand is `curl -fsSL <platform>/join/<token> | sudo sh -s -- FLAGS`
// in the machine (sudo left out: its shell is root already), with the
// flags the machine needs: a kubelet patch for this kernel, and the
// preflight checks it cannot pass, if any.
func (p *realPlatform) joinCommand(ctx context.Context, node *testenv.Node, token string, extra ...string) *exec.Cmd {
	args := []string{"--patches", node.KubeadmPatchesDir()}
	if ignore := node.KubeadmIgnorePreflightErrors(); ignore != "" {
		args = append(args, "--ignore-preflight-errors", ignore)
	}
	args = append(args, extra...)
	return node.Command(ctx, "sh", append([]string{"-c", `curl -fsSL "$0" | sh -s -- "$@"`, p.base + "/join/" + token}, args...)...)
}

// userKubeconfig downloads the cluster's kubeconfig from the console and
// makes a client of it that reaches the public endpoint through the edge,
// by name (the test process resolves the name to the host).
func (p *realPlatform) userKubeconfig(t testing.TB, c *console, cl queries.Cluster) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	code, raw := c.get(t, p.server, fmt.Sprintf("/clusters/%d/kubeconfig", cl.ID))
	require.Equal(t, http.StatusOK, code, raw)
	kc, err := clientcmd.Load([]byte(raw))
	require.NoError(t, err)
	for _, entry := range kc.Clusters {
		require.Equal(t, fmt.Sprintf("https://%s.clusters.test:%d", cl.Slug, p.edgePort), entry.Server, "the public endpoint, through the edge")
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
	require.NoError(t, err)
	// The test process does not resolve the name: it connects to the edge
	// by address, and names the cluster in TLS (SNI, and the certificate
	// it checks) as a client that resolves it would.
	cfg.Host = fmt.Sprintf("https://127.0.0.1:%d", p.edgePort)
	cfg.TLSClientConfig.ServerName = cl.Slug + ".clusters.test"
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cfg, client
}

// mirrorName is the admin's package mirror's host name, which the
// machines resolve to the host.
const mirrorName = "packages.test"

// TestRealNodesJoinKamajiClusters: two users each make a cluster in the
// console; a real machine each joins with the command the console shows,
// through the edge; each cluster sees only its own node. The second
// machine runs systemd, as servers do, and has no container runtime,
// kubelet or kubeadm, and no internet: its join script installs containerd
// with apt from the machine's Debian mirror and kubelet and kubeadm from
// the admin's package mirror, systemd runs containerd and kubelet (from the
// packages' unit, as kubeadm asks), and --reset-only removes them. A third,
// bare and RHEL-like (dnf, no apt), does the same with dnf from the
// mirror's RPM repository and joins the second cluster. On the first:
// a Deployment applied with the downloaded kubeconfig runs on the node,
// its logs and exec work, the join diagnostics show every step, the node
// operations do what they say on the real node, a stopped kubelet turns
// the node NotReady in the console and tells the owner, and --reset-only
// leaves the machine clean.
func TestRealNodesJoinKamajiClusters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	mirror := testenv.StartPackageMirror(t, mirrorName)
	p := startRealPlatform(t, mirror.URL)
	alice := p.userConsole(t, "alice@example.com")
	bob := p.userConsole(t, "bob@example.com")
	step("platform up")

	clA, _ := p.createCluster(t, alice, "alpha")
	clB, _ := p.createCluster(t, bob, "bravo")
	step("clusters ready")
	hostA := clA.Slug + ".clusters.test"
	hostB := clB.Slug + ".clusters.test"
	nodeA := testenv.NewNode(t, testenv.NodeOptions{Name: "machine-a", HostAliases: []string{platformName, hostA, hostB}})
	nodeB := testenv.NewNode(t, testenv.NodeOptions{Name: "machine-b", Systemd: true, HostAliases: []string{platformName, hostA, hostB, mirrorName}})
	step("machines up")

	// Each machine joins its owner's cluster.
	tokenA, out := p.join(t, alice, clA, nodeA)
	require.Contains(t, out, "The node is Ready.", out)
	step("machine A joined")
	// Machine B's apt source is a mirror of Debian, as on a machine with
	// no internet.
	nodeOutput(t, nodeB, "sh", "-c", fmt.Sprintf(`mkdir -p /etc/apt/keyrings && rm -f /etc/apt/sources.list.d/*.sources &&
		curl -fsS %[1]s/Release.key | gpg --dearmor -o /etc/apt/keyrings/debian-mirror.gpg &&
		echo "deb [signed-by=/etc/apt/keyrings/debian-mirror.gpg] %[1]s/ /" >/etc/apt/sources.list`, mirror.DebianURL))
	// Machine B is checked first (--check), which changes nothing.
	tokenB := bob.createJoinToken(t, p.server, clB.ID)
	out = p.runJoin(t, nodeB, tokenB, "--check")
	require.Contains(t, out, "Every check passed. Nothing was changed", out)
	_, err := os.Stat(nodeB.Path("/etc/kubernetes"))
	require.ErrorIs(t, err, os.ErrNotExist, "--check writes nothing")
	_, err = os.Stat(nodeB.Path("/usr/bin/kubeadm"))
	require.ErrorIs(t, err, os.ErrNotExist, "--check installs nothing")
	out = p.runJoin(t, nodeB, tokenB)
	require.Contains(t, out, "The node is Ready.", out)
	step("machine B checked, then joined")

	// Machine B had no containerd, kubelet or kubeadm: apt installed them
	// from the mirrors, kubelet and kubeadm held at the cluster's version;
	// systemd runs containerd with systemd's cgroups, and kubelet from the
	// package's unit with kubeadm's drop-in.
	require.Contains(t, out, "systemd is running.", out)
	require.Contains(t, out, "No container runtime yet: containerd will be installed.", out)
	require.Contains(t, out, "Installed: containerd kubelet kubeadm", out)
	require.Equal(t, "enabled\nenabled\nactive\nactive\n",
		nodeOutput(t, nodeB, "sh", "-c", "systemctl is-enabled containerd kubelet && systemctl is-active containerd kubelet"))
	containerdConfig, err := os.ReadFile(nodeB.Path("/etc/containerd/config.toml"))
	require.NoError(t, err)
	require.Contains(t, string(containerdConfig), "SystemdCgroup = true")
	require.Contains(t, nodeOutput(t, nodeB, "sh", "-c", `tr '\0' ' ' </proc/"$(systemctl show -p MainPID --value kubelet)"/cmdline`),
		"/usr/bin/kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml")
	require.Contains(t, mirror.Requests(), fmt.Sprintf("/core:/stable:/%s/deb/amd64/kubeadm_%s_amd64.deb", mirror.Minor, mirror.Version))
	require.Equal(t, fmt.Sprintf("kubeadm %[1]s hold ok installed\nkubelet %[1]s hold ok installed\n", mirror.Version),
		nodeOutput(t, nodeB, "dpkg-query", "-W", "-f", "${Package} ${Version} ${Status}\n", "kubeadm", "kubelet"))
	require.Equal(t, "/usr/bin/kubelet\n", nodeOutput(t, nodeB, "sh", "-c", "command -v kubelet"))
	sources, err := os.ReadFile(nodeB.Path("/etc/apt/sources.list.d/kubernetes.list"))
	require.NoError(t, err)
	require.Contains(t, string(sources), mirror.URL+"/core:/stable:/"+mirror.Minor+"/deb/ /")
	for _, unit := range []string{"/usr/lib/systemd/system/kubelet.service", "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf"} {
		_, err := os.Stat(nodeB.Path(unit))
		require.NoError(t, err, "the packages' systemd unit %s", unit)
	}
	step("machine B's packages checked")

	// Machine C is RHEL-like: Rocky's os-release, dnf and no apt-get (the
	// host's dnf, rpm and an rpm database of its own). It installs from
	// the mirror's RPM repository, the packages' signatures checked with
	// the mirror's key, and joins bob's cluster as its second node.
	nodeC := testenv.NewNode(t, testenv.NodeOptions{Name: "machine-c", Bare: true, HostAliases: []string{platformName, hostB, mirrorName}})
	nodeOutput(t, nodeC, "sh", "-c", `rm /usr/bin/apt-get /etc/os-release && mkdir -p /etc/yum.repos.d &&
		printf 'NAME="Rocky Linux"\nVERSION_ID="9.6"\nID="rocky"\nID_LIKE="rhel centos fedora"\n' >/etc/os-release`)
	out = p.runJoin(t, nodeC, bob.createJoinToken(t, p.server, clB.ID))
	require.Contains(t, out, "Operating system supported: rocky", out)
	require.Contains(t, out, "Importing GPG key", out)
	require.Contains(t, out, "Installed: kubelet kubeadm", out)
	require.Contains(t, out, "The node is Ready.", out)
	require.Contains(t, mirror.Requests(), fmt.Sprintf("/core:/stable:/%s/rpm/x86_64/kubeadm-%s.x86_64.rpm", mirror.Minor, mirror.RPMVersion))
	require.Equal(t, fmt.Sprintf("kubeadm-%[1]s.x86_64\nkubelet-%[1]s.x86_64\n", mirror.RPMVersion), nodeOutput(t, nodeC, "rpm", "-q", "kubeadm", "kubelet"))
	step("machine C (RHEL-like) installed with dnf and joined")

	// The console lists each cluster's own node, Ready.
	for _, tt := range []struct {
		c        *console
		cl       queries.Cluster
		own, not string
	}{{alice, clA, "machine-a", "machine-b"}, {bob, clB, "machine-b", "machine-a"}} {
		page := fmt.Sprintf("/clusters/%d/nodes", tt.cl.ID)
		require.Eventually(t, func() bool {
			_, body := tt.c.get(t, p.server, page)
			status, _ := nodeStatus(body, tt.own)
			return status == "Ready"
		}, time.Minute, time.Second, "%s lists %s Ready", page, tt.own)
		_, body := tt.c.get(t, p.server, page)
		require.NotContains(t, body, tt.not, "a cluster sees only its own node")
		code, _ := tt.c.get(t, p.server, fmt.Sprintf("/clusters/%d/nodes", map[int64]int64{clA.ID: clB.ID, clB.ID: clA.ID}[tt.cl.ID]))
		require.Equal(t, http.StatusNotFound, code, "another user's cluster is not found")
	}
	step("each console lists its own node")

	// Every step of the join was reported, and the token was spent once
	// the Node registered.
	rows, err := p.pool.Query(ctx, `SELECT step || ':' || status FROM join_events e JOIN join_tokens t ON t.id = e.token_id
		WHERE t.cluster_id = $1 ORDER BY e.id`, clA.ID)
	require.NoError(t, err)
	var steps []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		steps = append(steps, s)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"curl:ok", "root:ok", "systemd:ok", "arch:ok", "os:ok", "swap:ok", "kernel:ok", "runtime:ok", "ports:ok",
		"endpoint:ok", "clock:ok", "install:ok", "join:ok", "ready:ok"}, steps)
	_, tokensPage := alice.get(t, p.server, fmt.Sprintf("/clusters/%d/tokens", clA.ID))
	require.Contains(t, tokensPage, "machine-a")
	_ = tokenA

	// A Deployment through the edge with the downloaded kubeconfig runs
	// on the machine; logs and exec work.
	cfg, client := p.userKubeconfig(t, alice, clA)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: metav1.NamespaceDefault},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hello"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "hello"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "hello", Image: testenv.NodeBusyboxImage, ImagePullPolicy: corev1.PullNever,
						Command: []string{"sh", "-c", "echo hello from the machine; exec sleep 3600"},
					}},
					TerminationGracePeriodSeconds: new(int64),
				},
			},
		},
	}
	_, err = client.AppsV1().Deployments(dep.Namespace).Create(ctx, dep, metav1.CreateOptions{})
	require.NoError(t, err)
	var pod corev1.Pod
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		pods, err := client.CoreV1().Pods(dep.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=hello"})
		if assert.NoError(ct, err) && assert.Len(ct, pods.Items, 1) {
			pod = pods.Items[0]
			assert.Equal(ct, corev1.PodRunning, pod.Status.Phase)
			assert.Equal(ct, "machine-a", pod.Spec.NodeName)
		}
	}, 2*time.Minute, 500*time.Millisecond, "the Deployment's pod runs on the machine")
	step("pod running")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		logs, err := client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if assert.NoError(ct, err) {
			assert.Equal(ct, "hello from the machine\n", string(logs))
		}
	}, 30*time.Second, 500*time.Millisecond)
	stdout, _, err := testenv.PodExec(ctx, cfg, pod.Namespace, pod.Name, "sh", "-c", "echo exec works on $(hostname)")
	require.NoError(t, err)
	require.Equal(t, "exec works on "+pod.Name+"\n", stdout)
	step("logs and exec through the edge")

	// Health: a stopped kubelet turns the node NotReady in the console and
	// tells the owner; started again, Ready.
	nodesPage := fmt.Sprintf("/clusters/%d/nodes", clA.ID)
	nodeA.StopKubelet(t)
	require.Eventually(t, func() bool {
		_, body := alice.get(t, p.server, nodesPage)
		status, text := nodeStatus(body, "machine-a")
		return status == "Unknown" && text == "NotReady (kubelet not reporting)"
	}, 3*time.Minute, 2*time.Second, "the console shows the node NotReady")
	require.Eventually(t, func() bool {
		_, body := alice.get(t, p.server, "/notifications")
		return strings.Contains(body, "machine-a")
	}, 2*time.Minute, 2*time.Second, "the owner is told")
	step("kubelet stopped: NotReady, owner told")
	nodeA.StartKubelet(t)
	require.Eventually(t, func() bool {
		_, body := alice.get(t, p.server, nodesPage)
		status, _ := nodeStatus(body, "machine-a")
		return status == "Ready"
	}, 3*time.Minute, 2*time.Second, "the console shows the node Ready again")
	step("kubelet started: Ready")

	// Node operations on the real node, from the console.
	nodePage := fmt.Sprintf("/clusters/%d/nodes/machine-a", clA.ID)
	resp, body := alice.post(t, p.server, nodePage, nodePage+"/cordon", url.Values{})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	require.Eventually(t, func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, "machine-a", metav1.GetOptions{})
		return err == nil && n.Spec.Unschedulable
	}, 30*time.Second, 500*time.Millisecond, "cordoned")
	resp, body = alice.post(t, p.server, nodePage, nodePage+"/uncordon", url.Values{})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	require.Eventually(t, func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, "machine-a", metav1.GetOptions{})
		return err == nil && !n.Spec.Unschedulable
	}, 30*time.Second, 500*time.Millisecond, "uncordoned")
	drain := url.Values{"ignore_daemonsets": {"on"}, "force": {"on"}, "grace_period": {"0"}, "timeout": {"120"}}
	resp, body = alice.post(t, p.server, nodePage+"/drain", nodePage+"/drain", drain)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	require.Eventually(t, func() bool {
		_, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 2*time.Minute, time.Second, "the drain evicts the real pod")
	n, err := client.CoreV1().Nodes().Get(ctx, "machine-a", metav1.GetOptions{})
	require.NoError(t, err)
	require.True(t, n.Spec.Unschedulable, "a drained node stays cordoned")
	step("cordon, uncordon, drain")
	resp, body = alice.post(t, p.server, nodePage+"/delete", nodePage+"/delete", url.Values{"grace_period": {"0"}, "timeout": {"120"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	require.Eventually(t, func() bool {
		_, err := client.CoreV1().Nodes().Get(ctx, "machine-a", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, time.Minute, time.Second, "the Node is deleted")
	step("node deleted")

	// --reset-only cleans the machine.
	_, out = p.join(t, alice, clA, nodeA, "--reset-only")
	require.Contains(t, out, "The machine is cleaned", out)
	for _, dir := range []string{"/etc/kubernetes", "/var/lib/kubelet"} {
		entries, err := os.ReadDir(nodeA.Path(dir))
		require.NoError(t, err)
		require.Empty(t, entries, "%s is empty after --reset-only", dir)
	}
	require.Error(t, nodeA.Command(ctx, "pgrep", "-x", "kubelet").Run(), "no kubelet runs")
	step("machine reset")

	// Machine B still runs in its own cluster.
	_, body = bob.get(t, p.server, fmt.Sprintf("/clusters/%d/nodes", clB.ID))
	require.Contains(t, body, "machine-b")

	// --reset-only removes what the script installed on machine B.
	_, out = p.join(t, bob, clB, nodeB, "--reset-only")
	require.Contains(t, out, "The machine is cleaned", out)
	require.Error(t, nodeB.Command(ctx, "sh", "-c", "command -v kubelet || command -v kubeadm").Run(), "kubelet and kubeadm are gone")
	b, err := nodeB.Command(ctx, "dpkg-query", "-W", "containerd", "kubeadm", "kubelet").CombinedOutput()
	require.Error(t, err)
	require.Equal(t, "dpkg-query: no packages found matching containerd\ndpkg-query: no packages found matching kubeadm\ndpkg-query: no packages found matching kubelet\n",
		string(b), "the packages are purged")
	_, err = os.Stat(nodeB.Path("/etc/apt/sources.list.d/kubernetes.list"))
	require.ErrorIs(t, err, os.ErrNotExist, "the mirror's source is removed")
	b, _ = nodeB.Command(ctx, "systemctl", "is-active", "kubelet").Output()
	require.Equal(t, "inactive\n", string(b), "kubelet is stopped")
	step("machine B reset: packages removed")
	_, out = p.join(t, bob, clB, nodeC, "--reset-only")
	require.Contains(t, out, "The machine is cleaned", out)
	b, err = nodeC.Command(ctx, "rpm", "-q", "kubeadm", "kubelet").CombinedOutput()
	require.Error(t, err)
	require.Equal(t, "package kubeadm is not installed\npackage kubelet is not installed\n", string(b), "the packages are removed")
	_, err = os.Stat(nodeC.Path("/etc/yum.repos.d/kubernetes.repo"))
	require.ErrorIs(t, err, os.ErrNotExist, "the mirror's repository is removed")
	step("machine C reset: packages removed")
}

// nodeOutput is what a command in node prints.
func nodeOutput(t testing.TB, node *testenv.Node, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := node.Command(ctx, name, args...).Output()
	require.NoError(t, err, "%s %v", name, args)
	return string(out)
}
