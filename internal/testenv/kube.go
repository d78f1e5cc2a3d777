package testenv

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kube is a real kube-apiserver (built from k8s.io/kubernetes in
// tools/kube-apiserver) on etcd, with RBAC and bootstrap-token
// authentication. No kubelet or controller-manager runs: tests create
// Nodes, Pods and ServiceAccounts themselves.
type Kube struct {
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// URL is the server's https address.
	URL string
	// CA is the PEM certificate that signed the serving certificate.
	CA []byte

	cmd  *exec.Cmd
	done chan struct{}
}

// Client is a clientset for the admin configuration.
func (k *Kube) Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		t.Fatalf("testenv: kube client: %v", err)
	}
	return c
}

// Kubeconfig renders the admin configuration as a kubeconfig file.
func (k *Kube) Kubeconfig(t testing.TB) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: k.URL, CertificateAuthorityData: k.CA}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: k.Config.CertData, ClientKeyData: k.Config.KeyData}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	cfg.CurrentContext = "test"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatalf("testenv: kubeconfig: %v", err)
	}
	return b
}

// UserConfig returns a client configuration authenticated as a user with
// a client certificate (its groups are the certificate's organisations),
// for tests of what RBAC lets someone do.
func (k *Kube) UserConfig(t testing.TB, user string, groups ...string) *rest.Config {
	t.Helper()
	kubeShared.mu.Lock()
	kubeShared.pki.serial++
	serial := kubeShared.pki.serial
	kubeShared.mu.Unlock()
	certPEM, keyPEM, err := kubeShared.pki.issue(serial, &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		t.Fatalf("testenv: user certificate: %v", err)
	}
	cfg := rest.CopyConfig(k.Config)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg
}

// nodePortBlocks counts the blocks of NodePorts handed out (NodePorts).
var nodePortBlocks atomic.Int32

// NodePorts gives a test a block of 100 of the shared host apiserver's
// NodePorts (its range is 30000-32767) that no other test of the process
// got before, until 27 blocks are out. Each test's database allocates
// ports without knowing the other tests' clusters, and the host refuses a
// port twice; tests set their settings' range to their block.
func NodePorts() (low, high int) {
	n := int(nodePortBlocks.Add(1)-1) % 27
	low = 30000 + n*100
	return low, low + 99
}

// kubeShared is the test binary's etcd and host apiserver, and the
// certificates every apiserver of the binary uses.
var kubeShared struct {
	once    sync.Once
	err     error
	dir     string
	etcd    *exec.Cmd
	etcdURL string
	pki     *pki
	host    *Kube
	seq     int
	mu      sync.Mutex
	started []*Kube
}

// HostKube returns the test binary's shared apiserver, the "host cluster".
// Tests share it, so each uses its own namespaces and names.
func HostKube(t testing.TB) *Kube {
	t.Helper()
	skipInShort(t, "a kube-apiserver")
	if err := kubeInit(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return kubeShared.host
}

// NewKube starts another apiserver on the shared etcd (its own key prefix),
// for a test that needs a second cluster, such as a virtual cluster. It is
// stopped when t ends.
func NewKube(t testing.TB) *Kube {
	t.Helper()
	skipInShort(t, "a kube-apiserver")
	if err := kubeInit(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	k, err := startAPIServer()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(k.stop)
	return k
}

func kubeInit() error {
	kubeShared.once.Do(func() {
		kubeShared.err = func() error {
			dir, err := tempDir("kubebyon-kube-")
			if err != nil {
				return err
			}
			kubeShared.dir = dir
			if kubeShared.pki, err = newPKI(dir); err != nil {
				return fmt.Errorf("certificates: %w", err)
			}
			if err := startEtcd(dir); err != nil {
				return err
			}
			kubeShared.host, err = startAPIServer()
			return err
		}()
	})
	return kubeShared.err
}

// dieWithTests makes a process the tests start end with the test binary:
// stopKube stops them when the tests end, but a binary that is killed (a
// timeout, Ctrl-C, the worker TestKilledWorkerRescued kills) never gets
// there, and its etcd and apiservers ran on, orphaned.
func dieWithTests() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

func stopKube() {
	kubeShared.mu.Lock()
	for _, k := range kubeShared.started {
		k.stop()
	}
	kubeShared.mu.Unlock()
	if kubeShared.etcd != nil && kubeShared.etcd.Process != nil {
		_ = kubeShared.etcd.Process.Kill()
		_ = kubeShared.etcd.Wait()
	}
	if kubeShared.dir != "" {
		_ = os.RemoveAll(kubeShared.dir)
	}
}

// kubeAPIServerBinary is $KUBE_APISERVER ('make test' builds and caches
// it), else built now into the same cache.
func kubeAPIServerBinary() (string, error) {
	if p := os.Getenv("KUBE_APISERVER"); p != "" {
		return p, nil
	}
	root := repoRoot()
	cmd := exec.Command("make", "-s", "kube-apiserver")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build kube-apiserver: %w: %s", err, out)
	}
	out, err := exec.Command("make", "-s", "-C", root, "--no-print-directory", "print-kube-apiserver").Output()
	if err != nil {
		return "", fmt.Errorf("locate kube-apiserver: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func startEtcd(dir string) error {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return fmt.Errorf("etcd not found: install the Debian package 'etcd-server': %w", err)
	}
	client, err := freePort()
	if err != nil {
		return err
	}
	peer, err := freePort()
	if err != nil {
		return err
	}
	kubeShared.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	var logs bytes.Buffer
	cmd := exec.Command(bin,
		"--name", "test",
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", kubeShared.etcdURL,
		"--advertise-client-urls", kubeShared.etcdURL,
		"--listen-peer-urls", peerURL,
		"--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "test="+peerURL,
		"--log-level", "error",
	)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = dieWithTests()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	kubeShared.etcd = cmd
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(kubeShared.etcdURL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd did not start: %v: %s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func startAPIServer() (*Kube, error) {
	bin, err := kubeAPIServerBinary()
	if err != nil {
		return nil, err
	}
	kubeShared.mu.Lock()
	kubeShared.seq++
	n := kubeShared.seq
	kubeShared.mu.Unlock()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := kubeShared.pki
	var logs bytes.Buffer
	cmd := exec.Command(bin,
		"--etcd-servers", kubeShared.etcdURL,
		"--etcd-prefix", fmt.Sprintf("/registry-%d", n),
		"--bind-address", "127.0.0.1",
		"--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(port),
		"--tls-cert-file", p.servingCert,
		"--tls-private-key-file", p.servingKey,
		"--client-ca-file", p.caCert,
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", p.saPub,
		"--service-account-signing-key-file", p.saKey,
		// Room for the Services of thousands of clusters (the install
		// benchmark makes 1,000); the first address is still 10.0.0.1.
		"--service-cluster-ip-range", "10.0.0.0/16",
		"--authorization-mode", "RBAC",
		"--enable-bootstrap-token-auth",
		"--allow-privileged",
		"--profiling=false",
		"--cert-dir", filepath.Join(kubeShared.dir, fmt.Sprintf("apiserver-%d", n)),
	)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = dieWithTests()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	k := &Kube{
		URL:  fmt.Sprintf("https://127.0.0.1:%d", port),
		CA:   p.caPEM,
		cmd:  cmd,
		done: make(chan struct{}),
		Config: &rest.Config{
			Host: fmt.Sprintf("https://127.0.0.1:%d", port),
			TLSClientConfig: rest.TLSClientConfig{
				CAData: p.caPEM, CertData: p.adminCertPEM, KeyData: p.adminKeyPEM,
			},
			QPS: 200, Burst: 400,
		},
	}
	go func() { _ = cmd.Wait(); close(k.done) }()
	kubeShared.mu.Lock()
	kubeShared.started = append(kubeShared.started, k)
	kubeShared.mu.Unlock()
	if err := k.waitReady(&logs); err != nil {
		k.stop()
		return nil, err
	}
	return k, nil
}

func (k *Kube) waitReady(logs *bytes.Buffer) error {
	client, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-k.done:
			return fmt.Errorf("kube-apiserver exited: %s", tail(logs.String(), 2000))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil && string(body) == "ok" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready: %v: %s", err, tail(logs.String(), 2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (k *Kube) stop() {
	select {
	case <-k.done:
		return
	default:
	}
	_ = k.cmd.Process.Kill()
	<-k.done
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// pki holds the certificates of the test apiservers, as files and PEM.
type pki struct {
	caCert, servingCert, servingKey, saPub, saKey string
	caPEM, adminCertPEM, adminKeyPEM              []byte
	issue                                         func(serial int64, tmpl *x509.Certificate) ([]byte, []byte, error)
	serial                                        int64
}

func newPKI(dir string) (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubebyon-test-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	p := &pki{caPEM: pemBlock("CERTIFICATE", caDER), serial: 100}

	issue := func(serial int64, tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
	}
	p.issue = issue
	servingCert, servingKey, err := issue(2, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// *.clusters.test: the tests' clusters' public names (the API base
		// domain they set), so that a kubeconfig naming one verifies
		// through the edge.
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "*.clusters.test"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
	})
	if err != nil {
		return nil, err
	}
	if p.adminCertPEM, p.adminKeyPEM, err = issue(3, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kubebyon-test-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}

	files := map[string][]byte{
		"ca.crt":      p.caPEM,
		"serving.crt": servingCert,
		"serving.key": servingKey,
		"sa.pub":      pemBlock("PUBLIC KEY", saPub),
		"sa.key":      pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	p.caCert = filepath.Join(dir, "ca.crt")
	p.servingCert, p.servingKey = filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	p.saPub, p.saKey = filepath.Join(dir, "sa.pub"), filepath.Join(dir, "sa.key")
	return p, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
