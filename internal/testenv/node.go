//go:build linux

package testenv

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Real Kubernetes machines for the tests: a tenant's control plane as
// processes on the host (StartControlPlane), and worker machines
// (NewNode), each a set of namespaces of its own with containerd and, once
// joined, kubelet and real containers. /work/shared/NODE-RUNTIME.md has the
// facts these follow (why each setting is there).

// nodeTools are the binaries NODE_TOOLS_DIR holds.
var nodeTools = []string{"kubelet", "kubeadm", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubectl"}

// NodeToolsDir is $NODE_TOOLS_DIR: the directory of kubelet, kubeadm,
// kube-controller-manager, kube-scheduler, kube-proxy and kubectl, which 'make
// node-tools-dir' builds and links there. It fails t when it is unset or lacks one.
func NodeToolsDir(t testing.TB) string {
	t.Helper()
	skipInShort(t, "the Kubernetes node binaries")
	dir := os.Getenv("NODE_TOOLS_DIR")
	if dir == "" {
		t.Fatal("testenv: NODE_TOOLS_DIR is not set: run 'make node-tools-dir' (it builds kubelet, kubeadm, " +
			"kube-controller-manager, kube-scheduler, kube-proxy and kubectl) and set NODE_TOOLS_DIR=$(make -s print-node-tools-dir)")
	}
	for _, name := range nodeTools {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			t.Fatalf("testenv: NODE_TOOLS_DIR=%s has no executable %s: run 'make node-tools-dir'", dir, name)
		}
	}
	return dir
}

// ---------------------------------------------------------------------------
// Control planes

// ControlPlaneOptions configure StartControlPlane.
type ControlPlaneOptions struct {
	// BindAddress is the address kube-apiserver listens on: "0.0.0.0" (all
	// of the host's, the host sides of the nodes' links among them) if empty.
	BindAddress string
	// AdvertiseAddress is the address the kubernetes Service's endpoints
	// name (kube-apiserver's --advertise-address), for pods that reach the
	// apiserver in-cluster through kube-proxy (Node.StartKubeProxy): a
	// node's HostIP, say. Empty: none (no endpoints), as without
	// kube-proxy the Service leads nowhere anyway.
	AdvertiseAddress string
	// Port is its port; 0 picks a free one when it starts.
	Port int
	// SANs are more DNS names and IP addresses for its serving certificate,
	// which always has 127.0.0.1, localhost, the bind address (unless it is
	// 0.0.0.0), the kubernetes Service's names and its first Service IP.
	SANs []string
	// ServiceCIDR is its Services' range: 10.96.0.0/12 (kubeadm's) if empty.
	ServiceCIDR string
	// NodeMonitorGracePeriod is how long kube-controller-manager waits for
	// a kubelet before it marks the Node's Ready condition Unknown: 10s if 0
	// (Kubernetes' default is 50s). The nodes' kubelets renew their leases
	// every 2s (KubeadmPatchesDir), well within it.
	NodeMonitorGracePeriod time.Duration
}

// ControlPlane is a tenant's control plane as Kamaji runs one, as processes
// on the host: kube-apiserver (on the shared etcd, under a key prefix of its
// own), kube-controller-manager and kube-scheduler. It has a CA of its own,
// so that no two control planes trust each other's nodes, and what kubeadm
// join needs of an apiserver: bootstrap-token authentication, the Node
// authorizer, a kubelet client certificate, the bootstrap signer and the
// CSR approver and signer.
type ControlPlane struct {
	// URL is https://127.0.0.1:Port (the bind address for 127.0.0.1 when
	// that is not 0.0.0.0).
	URL string
	// Port is kube-apiserver's port (on BindAddress).
	Port int
	// CA and CAKey are the PEM of its CA's certificate and key (the cluster
	// signing CA of kube-controller-manager too).
	CA, CAKey []byte
	// Config is an admin (system:masters) client configuration for URL.
	Config *rest.Config
	// AdminKubeconfig is the same as a kubeconfig file, the certificate and
	// key inline.
	AdminKubeconfig []byte
	// Dir holds its certificates, kubeconfigs and logs; it is removed at the
	// end of the test.
	Dir string

	// kubeProxyCert is the client certificate and key of system:kube-proxy
	// (bound to system:node-proxier by the apiserver's default policy).
	kubeProxyCert [2][]byte

	mu       sync.Mutex
	procs    []*process
	stopOnce sync.Once
}

// cpAttempts is how many ports a control plane's component tries: a port
// found free may be taken (by a client socket for a moment, or another
// test) before the component binds it.
const cpAttempts = 5

// StartControlPlane starts a control plane for t and returns once its
// apiserver is ready and kube-controller-manager and kube-scheduler answer
// their health checks, kube-controller-manager's controllers having made the
// default ServiceAccount. It is stopped when t ends; its logs are shown if t
// failed.
func StartControlPlane(t testing.TB, opts ControlPlaneOptions) *ControlPlane {
	t.Helper()
	skipInShort(t, "a kube-apiserver")
	tools := NodeToolsDir(t)
	if opts.BindAddress == "" {
		opts.BindAddress = "0.0.0.0"
	}
	bind, err := netip.ParseAddr(opts.BindAddress)
	if err != nil {
		t.Fatalf("testenv: control plane: bind address: %v", err)
	}
	if opts.ServiceCIDR == "" {
		opts.ServiceCIDR = "10.96.0.0/12"
	}
	services, err := netip.ParsePrefix(opts.ServiceCIDR)
	if err != nil {
		t.Fatalf("testenv: control plane: service CIDR: %v", err)
	}
	if opts.NodeMonitorGracePeriod == 0 {
		opts.NodeMonitorGracePeriod = 10 * time.Second
	}
	if err := kubeInit(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	apiserver, err := kubeAPIServerBinary()
	if err != nil {
		t.Fatalf("testenv: control plane: %v", err)
	}
	dir, err := tempDir("kubebyon-kube-cp-")
	if err != nil {
		t.Fatalf("testenv: control plane: %v", err)
	}
	cp := &ControlPlane{Dir: dir}
	t.Cleanup(func() {
		cp.Stop()
		if t.Failed() {
			for _, p := range cp.procs {
				t.Logf("testenv: control plane: %s log (%s), its end:\n%s", p.name, p.log, fileTail(p.log, 4000))
			}
		}
		_ = os.RemoveAll(dir)
	})
	pki, err := writeControlPlanePKI(dir, opts.SANs, bind, services)
	if err != nil {
		t.Fatalf("testenv: control plane: certificates: %v", err)
	}
	cp.CA, cp.CAKey = pki.caPEM, pki.caKeyPEM
	cp.kubeProxyCert = pki.clientCerts["system:kube-proxy"]
	if opts.AdvertiseAddress != "" {
		if _, err := netip.ParseAddr(opts.AdvertiseAddress); err != nil {
			t.Fatalf("testenv: control plane: advertise address: %v", err)
		}
	}

	kubeShared.mu.Lock()
	kubeShared.seq++
	seq := kubeShared.seq
	kubeShared.mu.Unlock()
	common := func(port int) []string {
		return []string{
			"--etcd-servers", kubeShared.etcdURL,
			"--etcd-prefix", fmt.Sprintf("/registry-%d", seq),
			"--bind-address", opts.BindAddress,
			"--secure-port", strconv.Itoa(port),
			"--tls-cert-file", pki.file("apiserver.crt"),
			"--tls-private-key-file", pki.file("apiserver.key"),
			"--client-ca-file", pki.file("ca.crt"),
			"--kubelet-client-certificate", pki.file("apiserver-kubelet-client.crt"),
			"--kubelet-client-key", pki.file("apiserver-kubelet-client.key"),
			"--kubelet-preferred-address-types", "InternalIP,Hostname",
			"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file", pki.file("sa.pub"),
			"--service-account-signing-key-file", pki.file("sa.key"),
			"--service-cluster-ip-range", opts.ServiceCIDR,
			"--authorization-mode", "Node,RBAC",
			"--enable-admission-plugins", "NodeRestriction",
			"--enable-bootstrap-token-auth",
			"--allow-privileged",
			"--profiling=false",
			"--cert-dir", filepath.Join(dir, "apiserver"),
		}
	}
	apiserverArgs := func(port int) []string {
		if opts.AdvertiseAddress != "" {
			// The kubernetes Service's endpoints: the address and port,
			// which the lease reconciler keeps.
			return append(common(port), "--advertise-address", opts.AdvertiseAddress)
		}
		// No address to advertise for the kubernetes Service (no
		// kube-proxy on the nodes): none, rather than a loopback address
		// the endpoint reconciler keeps failing to write.
		return append(common(port), "--advertise-address", "127.0.0.1", "--endpoint-reconciler-type", "none")
	}
	log := filepath.Join(dir, "kube-apiserver.log")
	for attempt := 1; ; attempt++ {
		port := opts.Port
		if port == 0 {
			if port, err = freePortOn(opts.BindAddress); err != nil {
				t.Fatalf("testenv: control plane: %v", err)
			}
		}
		host := "127.0.0.1"
		if !bind.IsUnspecified() {
			host = bind.String()
		}
		cp.Port, cp.URL = port, "https://"+net.JoinHostPort(host, strconv.Itoa(port))
		cp.Config = &rest.Config{
			Host:            cp.URL,
			TLSClientConfig: rest.TLSClientConfig{CAData: pki.caPEM, CertData: pki.adminCert, KeyData: pki.adminKey},
			QPS:             100, Burst: 200,
		}
		p, err := startProcess("kube-apiserver", log, exec.Command(apiserver, apiserverArgs(port)...))
		if err != nil {
			t.Fatalf("testenv: control plane: %v", err)
		}
		cp.add(p)
		client, err := kubernetes.NewForConfig(cp.Config)
		if err != nil {
			t.Fatalf("testenv: control plane: client: %v", err)
		}
		err = waitUntil(p, 90*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			if err == nil && string(body) != "ok" {
				err = fmt.Errorf("readyz: %s", body)
			}
			return err
		})
		if err == nil {
			break
		}
		p.stop()
		if opts.Port != 0 || attempt == cpAttempts || !strings.Contains(fileTail(log, 4000), "address already in use") {
			t.Fatalf("testenv: control plane: kube-apiserver: %v\n%s", err, fileTail(log, 4000))
		}
	}
	if cp.AdminKubeconfig, err = kubeconfig(cp.URL, pki.caPEM, pki.adminCert, pki.adminKey, "kubernetes-admin"); err != nil {
		t.Fatalf("testenv: control plane: admin kubeconfig: %v", err)
	}
	for _, c := range []struct{ name, user string }{
		{"controller-manager.conf", "system:kube-controller-manager"},
		{"scheduler.conf", "system:kube-scheduler"},
	} {
		b, err := kubeconfig(cp.URL, pki.caPEM, pki.clientCerts[c.user][0], pki.clientCerts[c.user][1], c.user)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, c.name), b, 0o600)
		}
		if err != nil {
			t.Fatalf("testenv: control plane: %s: %v", c.name, err)
		}
	}

	// kube-controller-manager and kube-scheduler start side by side.
	kcmConf, schedConf := filepath.Join(dir, "controller-manager.conf"), filepath.Join(dir, "scheduler.conf")
	components := []struct {
		name string
		args func(port int) []string
	}{
		{"kube-controller-manager", func(port int) []string {
			return []string{
				"--kubeconfig", kcmConf,
				"--authentication-kubeconfig", kcmConf,
				"--authorization-kubeconfig", kcmConf,
				"--bind-address", "127.0.0.1",
				"--secure-port", strconv.Itoa(port),
				"--cert-dir", filepath.Join(dir, "kube-controller-manager"),
				"--leader-elect=false",
				// bootstrapsigner signs cluster-info for kubeadm's discovery,
				// tokencleaner removes expired tokens; csrapproving and
				// csrsigning (in *) turn a bootstrap token into a kubelet
				// client certificate.
				"--controllers", "*,bootstrapsigner,tokencleaner",
				"--cluster-signing-cert-file", pki.file("ca.crt"),
				"--cluster-signing-key-file", pki.file("ca.key"),
				"--root-ca-file", pki.file("ca.crt"),
				"--service-account-private-key-file", pki.file("sa.key"),
				"--use-service-account-credentials",
				"--service-cluster-ip-range", opts.ServiceCIDR,
				"--node-monitor-grace-period", opts.NodeMonitorGracePeriod.String(),
				"--node-monitor-period", "1s",
				"--profiling=false",
			}
		}},
		{"kube-scheduler", func(port int) []string {
			return []string{
				"--kubeconfig", schedConf,
				"--authentication-kubeconfig", schedConf,
				"--authorization-kubeconfig", schedConf,
				"--bind-address", "127.0.0.1",
				"--secure-port", strconv.Itoa(port),
				"--cert-dir", filepath.Join(dir, "kube-scheduler"),
				"--leader-elect=false",
				"--profiling=false",
			}
		}},
	}
	errs := make([]error, len(components))
	var wg sync.WaitGroup
	for i, c := range components {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cp.startComponent(c.name, filepath.Join(tools, c.name), c.args)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("testenv: control plane: %v", err)
	}
	// Pods need their namespace's default ServiceAccount, which
	// kube-controller-manager's controllers make once they run.
	client := cp.Client(t)
	err = waitUntil(nil, 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("testenv: control plane: kube-controller-manager made no default ServiceAccount: %v", err)
	}
	return cp
}

// startComponent starts kube-controller-manager or kube-scheduler with
// args for a free secure port, until its /healthz answers ok.
func (cp *ControlPlane) startComponent(name, bin string, args func(port int) []string) error {
	log := filepath.Join(cp.Dir, name+".log")
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		p, err := startProcess(name, log, exec.Command(bin, args(port)...))
		if err != nil {
			return err
		}
		cp.add(p)
		err = waitUntil(p, 60*time.Second, func() error { return healthz(port) })
		if err == nil {
			return nil
		}
		p.stop()
		if attempt == cpAttempts || !strings.Contains(fileTail(log, 4000), "address already in use") {
			return fmt.Errorf("%s: %w\n%s", name, err, fileTail(log, 4000))
		}
	}
}

// healthz asks a component's secure port for /healthz; the component's
// certificate is its own self-signed one.
func healthz(port int) error {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	defer client.CloseIdleConnections()
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: %s: %s", resp.Status, body)
	}
	return nil
}

func (cp *ControlPlane) add(p *process) {
	cp.mu.Lock()
	cp.procs = append(cp.procs, p)
	cp.mu.Unlock()
}

// Client is a clientset for the admin configuration.
func (cp *ControlPlane) Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatalf("testenv: control plane client: %v", err)
	}
	return c
}

// CACertHash is the pin of the control plane's CA that `kubeadm join
// --discovery-token-ca-cert-hash` takes: "sha256:" and the hex SHA-256 of
// the CA's public key information.
func (cp *ControlPlane) CACertHash() string {
	block, _ := pem.Decode(cp.CA)
	if block == nil {
		panic("testenv: control plane CA: no PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		panic(fmt.Sprintf("testenv: control plane CA: %v", err))
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Stop stops the control plane's processes (scheduler and controller
// manager first); t's end does too.
func (cp *ControlPlane) Stop() {
	cp.stopOnce.Do(func() {
		cp.mu.Lock()
		procs := cp.procs
		cp.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
		}
	})
}

// controlPlanePKI is what writeControlPlanePKI made: files in dir, and
// the PEM the harness uses itself.
type controlPlanePKI struct {
	dir                 string
	caPEM, caKeyPEM     []byte
	adminCert, adminKey []byte
	clientCerts         map[string][2][]byte // user -> certificate, key
}

func (p *controlPlanePKI) file(name string) string { return filepath.Join(p.dir, name) }

// writeControlPlanePKI makes a control plane's CA and what it signs, and
// its service account key pair, in dir/pki.
func writeControlPlanePKI(dir string, sans []string, bind netip.Addr, services netip.Prefix) (*controlPlanePKI, error) {
	ca, err := newCertAuthority("kubebyon-test-cluster-ca")
	if err != nil {
		return nil, err
	}
	p := &controlPlanePKI{dir: filepath.Join(dir, "pki"), caPEM: ca.certPEM, clientCerts: map[string][2][]byte{}}
	if p.caKeyPEM, err = ca.keyPEM(); err != nil {
		return nil, err
	}
	files := map[string][]byte{"ca.crt": p.caPEM, "ca.key": p.caKeyPEM}

	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), services.Masked().Addr().Next().AsSlice()},
	}
	if !bind.IsUnspecified() {
		serving.IPAddresses = append(serving.IPAddresses, bind.AsSlice())
	}
	for _, san := range sans {
		if ip := net.ParseIP(san); ip != nil {
			serving.IPAddresses = append(serving.IPAddresses, ip)
		} else {
			serving.DNSNames = append(serving.DNSNames, san)
		}
	}
	if files["apiserver.crt"], files["apiserver.key"], err = ca.issue(serving); err != nil {
		return nil, err
	}
	// The apiserver's identity towards kubelets (logs, exec): kubelets
	// authenticate it with the cluster CA and authorize it with a
	// SubjectAccessReview, which system:masters passes.
	if files["apiserver-kubelet-client.crt"], files["apiserver-kubelet-client.key"], err = ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}
	if p.adminCert, p.adminKey, err = ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}
	for _, user := range []string{"system:kube-controller-manager", "system:kube-scheduler", "system:kube-proxy"} {
		cert, key, err := ca.issue(&x509.Certificate{
			Subject:     pkix.Name{CommonName: user},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})
		if err != nil {
			return nil, err
		}
		p.clientCerts[user] = [2][]byte{cert, key}
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	saKeyDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	files["sa.pub"], files["sa.key"] = pemBlock("PUBLIC KEY", saPub), pemBlock("EC PRIVATE KEY", saKeyDER)

	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return nil, err
	}
	for name, b := range files {
		if err := os.WriteFile(p.file(name), b, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// certAuthority is a control plane's own CA.
type certAuthority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	mu      sync.Mutex
	serial  int64
}

func newCertAuthority(name string) (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &certAuthority{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", der), serial: 1}, nil
}

func (ca *certAuthority) keyPEM() ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

// issue signs tmpl (its subject, names and extended key usages) for a new
// key, valid for a day.
func (ca *certAuthority) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	ca.mu.Lock()
	ca.serial++
	tmpl.SerialNumber = big.NewInt(ca.serial)
	ca.mu.Unlock()
	tmpl.NotBefore, tmpl.NotAfter = ca.cert.NotBefore, ca.cert.NotAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
}

// kubeconfig is a kubeconfig file for server with a client certificate.
func kubeconfig(server string, ca, cert, key []byte, user string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubernetes"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[user+"@kubernetes"] = &clientcmdapi.Context{Cluster: "kubernetes", AuthInfo: user}
	cfg.CurrentContext = user + "@kubernetes"
	return clientcmd.Write(*cfg)
}

// freePortOn is a TCP port free on host at the moment.
func freePortOn(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ---------------------------------------------------------------------------
// Processes

// process is a long-running program of the harness, writing to a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startProcess starts cmd (which dies with the tests unless it says
// otherwise), appending its output to the file log.
func startProcess(name, log string, cmd *exec.Cmd) (*process, error) {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = dieWithTests()
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop kills the process and what it started (nsenter's child in a node),
// and waits for it.
func (p *process) stop() {
	if p.exited() {
		return
	}
	killTree(p.cmd.Process.Pid)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
	}
}

// killTree kills pid and its descendants (found through /proc).
func killTree(pid int) {
	pids := []int{pid}
	for i := 0; i < len(pids); i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pids[i]))
		for _, task := range tasks {
			b, _ := os.ReadFile(task)
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					pids = append(pids, c)
				}
			}
		}
	}
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// waitUntil calls check every 100ms until it returns nil, p (if any) exits
// or timeout passes.
func waitUntil(p *process, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited: %s (last check: %w)", p.name, p.cmd.ProcessState, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %w", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fileTail is the last n bytes of the file at path, or why not.
func fileTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// ---------------------------------------------------------------------------
// Nodes

// Images every node has (imported into containerd's k8s.io namespace), made
// from the static /bin/busybox: pods use them with imagePullPolicy Never.
const (
	// NodePauseImage is containerd's sandbox image: busybox's sleep.
	NodePauseImage = "kubebyon.test/pause:1"
	// NodeBusyboxImage is busybox with its applets, Cmd /bin/sh.
	NodeBusyboxImage = "kubebyon.test/busybox:1"
)

const (
	// nodePath is PATH in a node, after NodeToolsDir.
	nodePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// nodeLinkPrefix names the host side of a node's veth; its number
	// follows (4 hex digits), which is also the node's address block.
	nodeLinkPrefix = "kbnode"
	// nodeNumbers is how many numbers a node may get: its /30 is the
	// number's in 100.64.0.0/15, its default pod range 10.128.0.0/9's.
	nodeNumbers = 1 << 15
	// nodeCgroupPrefix names the cgroups nodes make (then the test
	// binary's pid and the node's number).
	nodeCgroupPrefix = "kubebyon-node-"
	cniBinDir        = "/usr/lib/cni"
	busyboxPath      = "/bin/busybox"
)

// nodeOverlays are the machine's directories that a node sees as a copy of
// the host's (an overlay whose upper layer is a tmpfs of the node), so that
// it can make the directories it mounts its own over (nodeMounts) without
// making them on the host, and write anything else there.
var nodeOverlays = []string{"/etc", "/var/lib", "/var/log", "/run"}

// bareOverlays are the more directories a bare node (NodeOptions.Bare)
// sees as a copy of the host's: where packages install (/usr), apt
// keeps what it downloads (/var/cache), and root's home, where the host's
// rpm (Debian's) keeps its database (~/.rpmdb): what dnf installs on a
// RHEL-like node is then recorded on that node alone, and a test that
// stops before it removes the packages leaves none on the host.
var bareOverlays = []string{"/usr", "/var/cache", "/root"}

// nodeMounts are the fixed paths of a machine that kubeadm, kubelet and
// containerd write, and the directory of the node (in Dir) each is.
var nodeMounts = []struct{ path, dir string }{
	{"/etc/kubernetes", "etc-kubernetes"},
	{"/var/lib/kubelet", "var-lib-kubelet"},
	{"/var/log/pods", "var-log-pods"},
	{"/var/log/containers", "var-log-containers"},
	{"/run/containerd", "run-containerd"},
}

// nodeSysctls are the kernel settings kubelet makes what it wants unless
// protectKernelDefaults is set. They are the host's, not a namespace's:
// a node shows kubelet files with the values it wants over them, so that
// it changes nothing of the host.
var nodeSysctls = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// NodeOptions configure NewNode.
type NodeOptions struct {
	// Name is the machine's host name, and so its Node's: "node-NNNN" (its
	// number) if empty.
	Name string
	// PodCIDR is the range of its pods' addresses (its CNI bridge's):
	// 10.X.Y.0/24 from 10.128.0.0/9, as unique as its address, if empty.
	PodCIDR string
	// Hosts are names it resolves (its /etc/hosts) to the IPs given.
	Hosts map[string]string
	// HostAliases are names it resolves to HostIP, the host as it reaches
	// it: a control plane's name in its certificate, say.
	HostAliases []string
	// Bare leaves kubelet and kubeadm (NodeToolsDir) off its PATH, as on a
	// machine that never ran Kubernetes, for a join script to install them
	// with the machine's package manager: its /usr and /var/cache are a
	// copy of the host's too (bareOverlays), so that what apt and dpkg
	// install stays in the node.
	Bare bool
	// Systemd makes it a machine as servers are: systemd is its init, in a
	// Debian root file system of its own (systemdRoot) with neither a
	// container runtime nor kubelet and kubeadm (Bare is implied), nor the
	// images, until a join script installs them (containerd from the
	// machine's Debian mirror: PackageMirror.DebianURL). Its cgroups are a
	// cgroup namespace of its own; systemd runs containerd and kubelet.
	Systemd bool
}

// Node is a worker machine of its own on the host: namespaces of its own
// (network, mount, pid, UTS, IPC), held by its pid 1, a veth link to the
// host, the paths kubeadm and kubelet write its own (bind mounts of
// directories in Dir, in a copy-on-write view of the host's /etc, /var/lib,
// /var/log and /run), containerd with its own configuration, and the
// images NodePauseImage and NodeBusyboxImage. kubeadm and kubelet run in it
// through Command. At the end of the test all of it goes: its processes,
// mounts, link, cgroups and Dir.
type Node struct {
	// Name is its host name.
	Name string
	// IP is its address; HostIP the host's end of its link, which is its
	// default route (the host's other addresses are reached through it).
	IP, HostIP string
	// PodCIDR is its pods' range.
	PodCIDR string
	// Dir holds its files: its /etc/kubernetes, /var/lib/kubelet and the
	// rest (nodeMounts), containerd's root and state, kubelet.log and
	// containerd.log.
	Dir string
	// CgroupRoot is kubelet's cgroupRoot (KubeadmPatchesDir), made in
	// every cgroup hierarchy.
	CgroupRoot string

	path       string // PATH in the node
	systemd    bool
	nsenter    string
	number     int
	link       string
	holder     *exec.Cmd
	holderDone chan struct{}
	init       int // the host's pid of the machine's pid 1
	cgroups    []string

	mu      sync.Mutex
	procs   []*process
	kubelet *kubeletCommand
}

// kubeletCommand is how kubelet ran, read from /proc by StopKubelet.
type kubeletCommand struct {
	args, env []string
}

// nodeName is what a node's name may be: a DNS label, as host names and
// Node names are.
var nodeName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// nodeCgroupSweep removes, once per test binary, the cgroups of the nodes
// of test binaries that are gone.
var nodeCgroupSweep sync.Once

// NewNode makes a worker machine for t and returns once containerd in it
// runs with the images imported (a Systemd machine: once systemd reports
// it running). It needs root. kubelet does not run until a test starts it
// (StartKubeletFromKubeadmFlags, or a join script through Command).
func NewNode(t testing.TB, opts NodeOptions) *Node {
	t.Helper()
	skipInShort(t, "a kubelet node")
	if os.Geteuid() != 0 {
		t.Fatal("testenv: a node needs root (namespaces, mounts, cgroups); run the tests as root")
	}
	tools := NodeToolsDir(t)
	bins := map[string]string{}
	for _, b := range []struct{ name, pkg string }{
		{"nsenter", "util-linux"}, {"unshare", "util-linux"}, {"mount", "mount"}, {"iptables", "iptables"},
		{"containerd", "containerd"}, {"containerd-shim-runc-v2", "containerd"}, {"ctr", "containerd"}, {"runc", "runc"},
	} {
		p, err := exec.LookPath(b.name)
		if err != nil {
			t.Fatalf("testenv: node: %s not found: install the Debian package '%s'", b.name, b.pkg)
		}
		bins[b.name] = p
	}
	for _, plugin := range []string{"bridge", "host-local", "portmap", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil {
			t.Fatalf("testenv: node: no CNI plugin %s in %s: install the Debian package 'containernetworking-plugins'", plugin, cniBinDir)
		}
	}
	if _, err := os.Stat(busyboxPath); err != nil {
		t.Fatalf("testenv: node: no %s for the images: install the Debian package 'busybox-static'", busyboxPath)
	}
	if opts.Name != "" && !nodeName.MatchString(opts.Name) {
		t.Fatalf("testenv: node: %q is no host name (lower-case letters, digits and '-', 63 at most)", opts.Name)
	}
	nodeCgroupSweep.Do(sweepNodeCgroups)

	dir, err := tempDir("kubebyon-kube-node-")
	if err != nil {
		t.Fatalf("testenv: node: %v", err)
	}
	overlays := nodeOverlays
	if opts.Bare {
		overlays = append(slices.Clone(overlays), bareOverlays...)
	}
	for _, o := range overlays {
		if dir == o || strings.HasPrefix(dir, o+"/") {
			_ = os.RemoveAll(dir)
			t.Fatalf("testenv: node: its directory %s is under %s, which a node overlays: set TMPDIR elsewhere", dir, o)
		}
	}
	n := &Node{Dir: dir, path: tools + ":" + nodePath, systemd: opts.Systemd, nsenter: bins["nsenter"]}
	if opts.Bare || opts.Systemd {
		n.path = nodePath
	}
	t.Cleanup(func() { n.cleanup(t) })

	// A systemd machine's pid 1 waits for its root and cgroups
	// (bootSystemd), then becomes systemd.
	holds := "while :; do sleep 3600; done"
	if opts.Systemd {
		holds = fmt.Sprintf("while [ ! -e %[1]s ]; do sleep 0.1; done; exec /bin/sh %[1]s", shellQuote(filepath.Join(dir, "boot")))
	}
	if err := n.startHolder(bins["unshare"], holds); err != nil {
		t.Fatalf("testenv: node: %v", err)
	}
	if err := n.network(); err != nil {
		t.Fatalf("testenv: node: network: %v", err)
	}
	n.Name = opts.Name
	if n.Name == "" {
		n.Name = fmt.Sprintf("node-%04x", n.number)
	}
	n.PodCIDR = opts.PodCIDR
	if n.PodCIDR == "" {
		n.PodCIDR = fmt.Sprintf("10.%d.%d.0/24", 128+n.number>>8, n.number&0xff)
	}
	if _, err := netip.ParsePrefix(n.PodCIDR); err != nil {
		t.Fatalf("testenv: node: pod CIDR: %v", err)
	}
	if err := n.makeCgroups(); err != nil {
		t.Fatalf("testenv: node: cgroups: %v", err)
	}
	if opts.Systemd {
		if err := n.bootSystemd(opts, bins["unshare"]); err != nil {
			t.Fatalf("testenv: node %s: systemd: %v\n%s", n.Name, err, fileTail(filepath.Join(dir, "console.log"), 4000))
		}
	} else {
		if err := n.setUp(opts, overlays); err != nil {
			t.Fatalf("testenv: node %s: %v", n.Name, err)
		}
		if err := n.startContainerd(); err != nil {
			t.Fatalf("testenv: node %s: containerd: %v\n%s", n.Name, err, fileTail(filepath.Join(dir, "containerd.log"), 4000))
		}
	}
	// A systemd machine has no container runtime until a join script
	// installs one: no images (no pods for it).
	if !opts.Systemd {
		if err := n.importImages(); err != nil {
			t.Fatalf("testenv: node %s: images: %v", n.Name, err)
		}
	}
	if err := n.writeKubeadmPatches(); err != nil {
		t.Fatalf("testenv: node %s: kubeadm patches: %v", n.Name, err)
	}
	return n
}

// startHolder starts the machine's pid 1, in new namespaces: unshare
// forks it and, dying (with the tests: Pdeathsig), kills it, and the
// kernel then kills every process of its pid namespace. It reaps the
// orphans it gets (the shell's waits), as an init does.
func (n *Node) startHolder(unshare, holds string) error {
	cmd := exec.Command(unshare, "--kill-child=SIGKILL", "--fork", "--pid", "--mount-proc",
		"--mount", "--uts", "--ipc", "--net", "--propagation", "private",
		"--", "/bin/sh", "-c", holds)
	cmd.SysProcAttr = dieWithTests()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start unshare: %w", err)
	}
	n.holder, n.holderDone = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(n.holderDone) }()
	pid := cmd.Process.Pid
	return waitUntil(nil, 10*time.Second, func() error {
		select {
		case <-n.holderDone:
			return errors.New("unshare exited")
		default:
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		child, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return errors.New("unshare has not forked yet")
		}
		// Once it runs the shell, its namespaces and /proc are set up.
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", child)); strings.TrimSpace(string(comm)) != "sh" {
			return errors.New("the node's pid 1 does not run yet")
		}
		n.init = child
		return nil
	})
}

// network links the node to the host with a veth pair: a number picked at
// random names the host's side (the name is taken atomically, so nodes of
// other tests and test binaries never share one) and gives its /30.
func (n *Node) network() error {
	ns, err := netns.GetFromPid(n.init)
	if err != nil {
		return fmt.Errorf("the node's network namespace: %w", err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in the node: %w", err)
	}
	defer h.Close()
	used, err := hostPrefixes()
	if err != nil {
		return err
	}
	block := netip.MustParseAddr("100.64.0.0").As4()
	for attempt := 0; attempt < 100; attempt++ {
		number := mrand.IntN(nodeNumbers)
		a := block
		a[1] += byte(number >> 14)
		a[2] = byte(number >> 6)
		a[3] = byte(number << 2)
		prefix := netip.PrefixFrom(netip.AddrFrom4(a), 30)
		if overlaps(prefix, used) {
			continue
		}
		name := fmt.Sprintf("%s%04x", nodeLinkPrefix, number)
		attrs := netlink.NewLinkAttrs()
		attrs.Name = name
		err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns))})
		if errors.Is(err, syscall.EEXIST) {
			continue
		}
		if err != nil {
			return fmt.Errorf("add link %s: %w", name, err)
		}
		n.number, n.link = number, name
		hostIP, nodeIP := prefix.Addr().Next(), prefix.Addr().Next().Next()
		n.HostIP, n.IP = hostIP.String(), nodeIP.String()
		return n.configureLink(h, hostIP, nodeIP)
	}
	return errors.New("no free address block for the node's link")
}

// configureLink gives both ends of the node's link their addresses, and
// the node its default route through the host.
func (n *Node) configureLink(h *netlink.Handle, hostIP, nodeIP netip.Addr) error {
	host, err := netlink.LinkByName(n.link)
	if err != nil {
		return err
	}
	if err := netlink.AddrAdd(host, &netlink.Addr{IPNet: &net.IPNet{IP: hostIP.AsSlice(), Mask: net.CIDRMask(30, 32)}}); err != nil {
		return fmt.Errorf("host address: %w", err)
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return err
	}
	for _, name := range []string{"lo", "eth0"} {
		l, err := h.LinkByName(name)
		if err == nil {
			err = h.LinkSetUp(l)
		}
		if err != nil {
			return fmt.Errorf("set %s up in the node: %w", name, err)
		}
	}
	eth0, err := h.LinkByName("eth0")
	if err != nil {
		return err
	}
	if err := h.AddrAdd(eth0, &netlink.Addr{IPNet: &net.IPNet{IP: nodeIP.AsSlice(), Mask: net.CIDRMask(30, 32)}}); err != nil {
		return fmt.Errorf("node address: %w", err)
	}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: hostIP.AsSlice()}); err != nil {
		return fmt.Errorf("node default route: %w", err)
	}
	return nil
}

// hostPrefixes are the host's IPv4 networks (its addresses' and routes'
// but the default route), which a node's block must not overlap.
func hostPrefixes() ([]netip.Prefix, error) {
	var used []netip.Prefix
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("host addresses: %w", err)
	}
	for _, a := range addrs {
		if p, ok := prefixOf(a.IPNet); ok {
			used = append(used, p)
		}
	}
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("host routes: %w", err)
	}
	for _, r := range routes {
		if p, ok := prefixOf(r.Dst); ok && p.Bits() > 0 {
			used = append(used, p)
		}
	}
	return used, nil
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones).Masked(), true
}

func overlaps(p netip.Prefix, used []netip.Prefix) bool {
	for _, u := range used {
		if u.Overlaps(p) {
			return true
		}
	}
	return false
}

// cgroupMount is a mounted cgroup hierarchy.
type cgroupMount struct {
	path string
	v2   bool
	// options are a v1 hierarchy's controllers ("cpu", "name=systemd"),
	// as mount takes them.
	options string
}

// cgroupMounts are the cgroup hierarchies mounted (v1 and v2).
func cgroupMounts() ([]cgroupMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mounts []cgroupMount
	seen := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		pre, post, ok := strings.Cut(s.Text(), " - ")
		fields, fs := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(fs) < 1 || (fs[0] != "cgroup" && fs[0] != "cgroup2") || seen[fields[4]] {
			continue
		}
		seen[fields[4]] = true
		m := cgroupMount{path: fields[4], v2: fs[0] == "cgroup2"}
		if len(fs) >= 3 {
			var opts []string
			for _, o := range strings.Split(fs[2], ",") {
				if o != "rw" && o != "ro" {
					opts = append(opts, o)
				}
			}
			m.options = strings.Join(opts, ",")
		}
		mounts = append(mounts, m)
	}
	return mounts, s.Err()
}

// makeCgroups makes the node's cgroupRoot in every hierarchy; a new cpuset
// cgroup (v1) has no CPUs or memory nodes until given its parent's.
func (n *Node) makeCgroups() error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	n.CgroupRoot = fmt.Sprintf("/%s%d-%04x", nodeCgroupPrefix, os.Getpid(), n.number)
	for _, m := range mounts {
		dir := filepath.Join(m.path, n.CgroupRoot)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		n.cgroups = append(n.cgroups, dir)
		if m.v2 {
			continue
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			b, err := os.ReadFile(filepath.Join(m.path, file))
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, file), b, 0o644)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
	}
	return nil
}

// removeCgroup removes the cgroup dir and those under it, deepest first,
// trying for up to timeout while killed processes leave them.
func removeCgroup(dir string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var dirs []string
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		var err error
		for i := len(dirs) - 1; i >= 0; i-- {
			if e := syscall.Rmdir(dirs[i]); e != nil && !errors.Is(e, syscall.ENOENT) {
				err = fmt.Errorf("remove cgroup %s: %w", dirs[i], e)
			}
		}
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sweepNodeCgroups removes the cgroups of nodes whose test binary is gone
// (killed before its clean-up ran).
func sweepNodeCgroups() {
	mounts, err := cgroupMounts()
	if err != nil {
		return
	}
	for _, m := range mounts {
		dirs, _ := filepath.Glob(filepath.Join(m.path, nodeCgroupPrefix+"*"))
		for _, dir := range dirs {
			pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(dir), nodeCgroupPrefix), "-", 2)[0])
			if err != nil || syscall.Kill(pid, 0) != syscall.ESRCH {
				continue
			}
			_ = removeCgroup(dir, 0)
		}
	}
}

// setUp makes the node's mounts (in its mount namespace: the host sees
// none), host name, /etc/hosts and IP forwarding.
func (n *Node) setUp(opts NodeOptions, overlays []string) error {
	if err := os.WriteFile(filepath.Join(n.Dir, "hosts"), n.hostsFile(opts), 0o644); err != nil {
		return err
	}
	if err := n.writeSysctlFiles(); err != nil {
		return err
	}
	q := shellQuote
	var s strings.Builder
	s.WriteString("set -e\n")
	// The overlays' upper layers are on a tmpfs of the node's mount
	// namespace: what it writes there goes with it.
	fmt.Fprintf(&s, "mkdir -p %[1]s && mount -t tmpfs -o mode=0755 kubebyon-node %[1]s\n", q(filepath.Join(n.Dir, "ns")))
	for _, o := range overlays {
		layer := filepath.Join(n.Dir, "ns", strings.ReplaceAll(strings.Trim(o, "/"), "/", "-"))
		fmt.Fprintf(&s, "mkdir -p %s %s\n", q(layer+"/upper"), q(layer+"/work"))
		fmt.Fprintf(&s, "mount -t overlay kubebyon-node -o %s %s\n",
			q(fmt.Sprintf("lowerdir=%s,upperdir=%s/upper,workdir=%s/work", o, layer, layer)), q(o))
	}
	for _, m := range nodeMounts {
		src := filepath.Join(n.Dir, m.dir)
		if err := os.MkdirAll(src, 0o755); err != nil {
			return err
		}
		fmt.Fprintf(&s, "mkdir -p %[2]s && mount --bind %[1]s %[2]s\n", q(src), q(m.path))
	}
	fmt.Fprintf(&s, "mount --bind %s /etc/hosts\n", q(filepath.Join(n.Dir, "hosts")))
	// A machine ID of its own (in the overlay), as distinct machines have.
	s.WriteString("tr -d - </proc/sys/kernel/random/uuid >/etc/machine-id\n")
	// The host's name servers are out of the node's reach (the host does
	// not forward its traffic): none, so that a name not in /etc/hosts fails
	// at once rather than after the resolver's time-outs.
	s.WriteString("rm -f /etc/resolv.conf && echo '# kubebyon test node: no name server; names are in /etc/hosts' >/etc/resolv.conf\n")
	for key := range nodeSysctls {
		fmt.Fprintf(&s, "mount --bind %s %s\n", q(n.sysctlFile(key)), q("/proc/sys/"+key))
	}
	fmt.Fprintf(&s, "hostname %s\n", q(n.Name))
	// Per network namespace; kubeadm's preflight wants it, pods need it.
	s.WriteString("echo 1 >/proc/sys/net/ipv4/ip_forward\n")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := n.Command(ctx, "/bin/sh", "-c", s.String()).CombinedOutput(); err != nil {
		return fmt.Errorf("set up the node's mounts: %w: %s", err, out)
	}
	return nil
}

// hostsFile is the node's /etc/hosts: the host's, the node's own name,
// HostAliases and Hosts.
func (n *Node) hostsFile(opts NodeOptions) []byte {
	var hosts bytes.Buffer
	if b, err := os.ReadFile("/etc/hosts"); err == nil {
		hosts.Write(b)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			hosts.WriteByte('\n')
		}
	}
	fmt.Fprintf(&hosts, "# kubebyon test node %s\n%s\t%s\n", n.Name, n.IP, n.Name)
	if len(opts.HostAliases) > 0 {
		fmt.Fprintf(&hosts, "%s\t%s\n", n.HostIP, strings.Join(opts.HostAliases, " "))
	}
	names := make([]string, 0, len(opts.Hosts))
	for name := range opts.Hosts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&hosts, "%s\t%s\n", opts.Hosts[name], name)
	}
	return hosts.Bytes()
}

// writeSysctlFiles writes the files a node shows over the kernel settings
// in nodeSysctls (sysctlFile).
func (n *Node) writeSysctlFiles() error {
	if err := os.MkdirAll(filepath.Join(n.Dir, "sysctl"), 0o755); err != nil {
		return err
	}
	for key, value := range nodeSysctls {
		if err := os.WriteFile(n.sysctlFile(key), []byte(value+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) sysctlFile(key string) string {
	return filepath.Join(n.Dir, "sysctl", strings.ReplaceAll(key, "/", "."))
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// startContainerd writes containerd's configuration and CNI network and
// starts it, with its socket at the default path in the node, where
// kubelet, kubeadm and ctr look.
func (n *Node) startContainerd() error {
	d := filepath.Join(n.Dir, "containerd")
	cniConf := filepath.Join(n.Dir, "cni", "net.d")
	for _, dir := range []string{d, cniConf} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	config := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "/run/containerd/containerd.sock"

# Its default is /opt/containerd, on the host.
[plugins."io.containerd.internal.v1.opt"]
  path = %[3]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  # root may not lower an oom_score_adj here (no CAP_SYS_RESOURCE): runc
  # would fail every sandbox (NODE-RUNTIME.md).
  restrict_oom_score_adj = true
  # Pods' network namespaces under state, not the host's /run/netns.
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[5]q
    conf_dir = %[6]q
`, filepath.Join(d, "root"), filepath.Join(d, "state"), filepath.Join(d, "opt"), NodePauseImage, cniBinDir, cniConf)
	configFile := filepath.Join(d, "config.toml")
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cniConf, "10-kubebyon.conflist"), n.cniConflist(), 0o644); err != nil {
		return err
	}
	p, err := startProcess("containerd", filepath.Join(n.Dir, "containerd.log"),
		n.Command(context.Background(), "containerd", "--config", configFile))
	if err != nil {
		return err
	}
	n.add(p)
	// The socket is a file of the host too, in Dir.
	sock := filepath.Join(n.Dir, "run-containerd", "containerd.sock")
	return waitUntil(p, 30*time.Second, func() error {
		c, err := net.DialTimeout("unix", sock, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// cniConflist is the node's CNI network: a bridge for its pod range
// (containerd adds the loopback plugin for lo itself).
func (n *Node) cniConflist() []byte {
	return fmt.Appendf(nil, `{
  "cniVersion": "0.4.0",
  "name": "kubebyon",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, n.PodCIDR)
}

// importImages imports NodePauseImage and NodeBusyboxImage into the
// node's containerd (namespace k8s.io, which the CRI uses).
func (n *Node) importImages() error {
	archive := filepath.Join(n.Dir, "images.tar")
	if err := writeImageArchive(archive); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := n.Command(ctx, "ctr", "-n", "k8s.io", "images", "import", archive).CombinedOutput(); err != nil {
		return fmt.Errorf("ctr images import: %w: %s", err, out)
	}
	out, err := n.Command(ctx, "ctr", "-n", "k8s.io", "images", "ls", "-q").CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images ls: %w: %s", err, out)
	}
	for _, image := range []string{NodePauseImage, NodeBusyboxImage} {
		if !strings.Contains(string(out), image) {
			return fmt.Errorf("%s missing after the import: %s", image, out)
		}
	}
	return os.Remove(archive)
}

// writeImageArchive writes an OCI image layout as a tar (what `ctr images
// import` reads) holding NodePauseImage and NodeBusyboxImage. Both have a
// base layer of the static busybox with /bin/sleep; busybox's second layer
// has its other applets' links. Layers are uncompressed.
func writeImageArchive(path string) error {
	busybox, err := os.ReadFile(busyboxPath)
	if err != nil {
		return err
	}
	list, err := exec.Command(busyboxPath, "--list-full").Output()
	if err != nil {
		return fmt.Errorf("busybox --list-full: %w", err)
	}
	base, err := layer(func(w *tar.Writer) error {
		for _, d := range []string{"bin", "dev", "etc", "proc", "root", "sbin", "sys", "usr", "usr/bin", "usr/sbin", "var"} {
			if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755}); err != nil {
				return err
			}
		}
		if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777}); err != nil {
			return err
		}
		files := []struct {
			name string
			mode int64
			body []byte
		}{
			{"bin/busybox", 0o755, busybox},
			{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
			{"etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")},
		}
		for _, f := range files {
			if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.body))}); err != nil {
				return err
			}
			if _, err := w.Write(f.body); err != nil {
				return err
			}
		}
		return w.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/sleep", Linkname: "/bin/busybox", Mode: 0o777})
	})
	if err != nil {
		return err
	}
	applets, err := layer(func(w *tar.Writer) error {
		for _, name := range strings.Fields(string(list)) {
			if name == "bin/sleep" || name == "bin/busybox" {
				continue
			}
			if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: "/bin/busybox", Mode: 0o777}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}

	blobs := map[string][]byte{}
	add := func(mediaType string, b []byte) map[string]any {
		sum := sha256.Sum256(b)
		digest := "sha256:" + hex.EncodeToString(sum[:])
		blobs[digest] = b
		return map[string]any{"mediaType": mediaType, "digest": digest, "size": len(b)}
	}
	platform := map[string]any{"architecture": runtime.GOARCH, "os": "linux"}
	image := func(name string, cmd []string, layers ...[]byte) (map[string]any, error) {
		var diffIDs []string
		var descs []map[string]any
		for _, l := range layers {
			d := add("application/vnd.oci.image.layer.v1.tar", l)
			descs = append(descs, d)
			diffIDs = append(diffIDs, d["digest"].(string))
		}
		config, err := json.Marshal(map[string]any{
			"architecture": runtime.GOARCH, "os": "linux",
			"config": map[string]any{"Cmd": cmd, "Env": []string{"PATH=" + nodePath}},
			"rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs},
		})
		if err != nil {
			return nil, err
		}
		manifest, err := json.Marshal(map[string]any{
			"schemaVersion": 2,
			"mediaType":     "application/vnd.oci.image.manifest.v1+json",
			"config":        add("application/vnd.oci.image.config.v1+json", config),
			"layers":        descs,
		})
		if err != nil {
			return nil, err
		}
		desc := add("application/vnd.oci.image.manifest.v1+json", manifest)
		desc["platform"] = platform
		// The name containerd's import gives the image.
		desc["annotations"] = map[string]string{"io.containerd.image.name": name}
		return desc, nil
	}
	pause, err := image(NodePauseImage, []string{"/bin/sleep", "2147483647"}, base)
	if err != nil {
		return err
	}
	bb, err := image(NodeBusyboxImage, []string{"/bin/sh"}, base, applets)
	if err != nil {
		return err
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests":     []map[string]any{pause, bb},
	})
	if err != nil {
		return err
	}

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := tar.NewWriter(f)
	entries := []struct {
		name string
		body []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
	}
	digests := make([]string, 0, len(blobs))
	for d := range blobs {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		entries = append(entries, struct {
			name string
			body []byte
		}{"blobs/sha256/" + strings.TrimPrefix(d, "sha256:"), blobs[d]})
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755}); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644, Size: int64(len(e.body))}); err != nil {
			return err
		}
		if _, err := w.Write(e.body); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Close()
}

// layer is the tar that write makes, every entry root's.
func layer(write func(w *tar.Writer) error) ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	if err := write(w); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeKubeadmPatches writes KubeadmPatchesDir's patch.
func (n *Node) writeKubeadmPatches() error {
	dir := n.KubeadmPatchesDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cgroups := fmt.Sprintf("# No systemd: cgroupfs, in a cgroupRoot of the node's own.\ncgroupDriver: cgroupfs\ncgroupRoot: %s\n", n.CgroupRoot)
	if n.systemd {
		cgroups = "# systemd's cgroups (the ConfigMap's driver), in the node's cgroup namespace.\n"
	}
	patch := fmt.Sprintf(`# What kubelet needs on this machine (testenv/node.go, NODE-RUNTIME.md),
# over the kubelet-config ConfigMap's configuration (a JSON merge patch).
%s# cgroup v1 hierarchies: v1.34 only warns when this is false.
failCgroupV1: false
# The machine may have swap.
failSwapOn: false
# root may not lower an oom_score_adj here (no CAP_SYS_RESOURCE).
oomScoreAdj: 0
# Not systemd-resolved's file, whatever the ConfigMap says.
resolvConf: /etc/resolv.conf
# The host's disk may be fuller than kubelet's default thresholds allow
# (10%% free), which would taint the node with disk pressure; images
# imported by hand are never garbage-collected (no registry to pull them
# again from).
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
  imagefs.inodesFree: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# The lease renewed every 2s (a quarter of it): the test control planes
# mark a node Unknown after 10s without one.
nodeLeaseDurationSeconds: 8
`, cgroups)
	return os.WriteFile(filepath.Join(dir, "kubeletconfiguration+merge.yaml"), []byte(patch), 0o644)
}

// KubeadmPatchesDir is a directory for `kubeadm join --patches`: a patch of
// the kubelet configuration with every setting this kind of machine needs.
func (n *Node) KubeadmPatchesDir() string {
	return filepath.Join(n.Dir, "kubeadm-patches")
}

// KubeadmIgnorePreflightErrors is the comma-separated list of kubeadm's
// preflight checks this machine cannot pass, for `kubeadm join
// --ignore-preflight-errors` (to give only when not empty). It is empty on
// these machines: of kubeadm v1.34's join checks, Swap (swap on) and
// Service-Kubelet (no systemd: no kubelet unit) only warn, and
// SystemVerification only warns of cgroup v1; the node passes the rest
// itself: IsPrivilegedUser (root), ContainerRuntime (its containerd at
// the default socket), FileExisting-losetup/mount/cp and KubeletVersion
// (Command's PATH), Hostname (its /etc/hosts), Port-10250 and
// FileAvailable--etc-kubernetes-* (its own network namespace and
// /etc/kubernetes), FileContent--proc-sys-net-ipv4-ip_forward, checked when
// the endpoint is an IP address (set in its network namespace), HTTPProxy
// (Command's environment has no proxy). SystemVerification fails outright
// when it cannot read the kernel's configuration (no /proc/config.gz or
// /boot/config-*): it is in the list then.
func (n *Node) KubeadmIgnorePreflightErrors() string {
	var ignore []string
	if !kernelConfigReadable() {
		ignore = append(ignore, "SystemVerification")
	}
	return strings.Join(ignore, ",")
}

// kernelConfigReadable is whether kubeadm's kernel validator finds the
// kernel's configuration at one of its paths (k8s.io/system-validators).
func kernelConfigReadable() bool {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return false
	}
	release := strings.TrimSpace(string(b))
	for _, path := range []string{
		"/proc/config.gz",
		"/boot/config-" + release,
		"/usr/src/linux-" + release + "/.config",
		"/usr/src/linux/.config",
		"/usr/lib/modules/" + release + "/config",
		"/usr/lib/ostree-boot/config-" + release,
		"/usr/lib/kernel/config-" + release,
		"/usr/src/linux-headers-" + release + "/.config",
		"/lib/modules/" + release + "/build/.config",
	} {
		if _, err := os.Stat(path); err == nil {
			return true
		}
	}
	return false
}

func (n *Node) add(p *process) {
	n.mu.Lock()
	n.procs = append(n.procs, p)
	n.mu.Unlock()
}

// Command runs name in the node: in its network, mount, pid, UTS and IPC
// namespaces (nsenter), from its /, with PATH NodeToolsDir (unless Bare)
// and the usual directories and HOME /root (append to Env for more). It dies with the
// tests; cancelling ctx kills it and what it started.
func (n *Node) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	enter := []string{"--target", strconv.Itoa(n.init), "--net", "--mount", "--pid", "--uts", "--ipc"}
	if n.systemd {
		// Its root file system and cgroup namespace, from its /.
		enter = append(enter, "--cgroup", "--root", "--wd")
	}
	cmd := exec.CommandContext(ctx, n.nsenter, append(append(enter, "--", name), args...)...)
	cmd.Env = []string{"PATH=" + n.path, "HOME=/root"}
	cmd.SysProcAttr = dieWithTests()
	// nsenter forks to enter the pid namespace: killing it alone would
	// leave the command running.
	cmd.Cancel = func() error {
		killTree(cmd.Process.Pid)
		return nil
	}
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// Path is the host's path of the file at path in the node (through its pid
// 1's root, so in its mount namespace), while the node runs.
func (n *Node) Path(path string) string {
	return fmt.Sprintf("/proc/%d/root%s", n.init, path)
}

// kubeletPidFile is where whoever starts kubelet in a node (a join script,
// the harness) writes its pid (in the node's pid namespace).
const kubeletPidFile = "/var/lib/kubelet/kubelet.pid"

// StartKubeletFromKubeadmFlags starts kubelet as kubeadm's systemd drop-in
// would, once `kubeadm join` (which waits for a kubelet and with no systemd
// starts none) has written /var/lib/kubelet/kubeadm-flags.env in the node:
// it waits up to two minutes for it. Its pid goes to
// /var/lib/kubelet/kubelet.pid in the node, its log to Dir/kubelet.log.
func (n *Node) StartKubeletFromKubeadmFlags(t testing.TB) {
	t.Helper()
	var kubeadmArgs []string
	err := waitUntil(nil, 2*time.Minute, func() error {
		env, err := readEnvFile(n.Path("/var/lib/kubelet/kubeadm-flags.env"))
		if err != nil {
			return err
		}
		if _, err := os.Stat(n.Path("/var/lib/kubelet/config.yaml")); err != nil {
			return err
		}
		kubeadmArgs = strings.Fields(env["KUBELET_KUBEADM_ARGS"])
		return nil
	})
	if err != nil {
		t.Fatalf("testenv: node %s: no kubeadm-flags.env from kubeadm: %v", n.Name, err)
	}
	args := []string{
		"kubelet",
		"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
		"--kubeconfig=/etc/kubernetes/kubelet.conf",
		"--config=/var/lib/kubelet/config.yaml",
	}
	args = append(args, kubeadmArgs...)
	// The drop-in's EnvironmentFile=-/etc/default/kubelet.
	if env, err := readEnvFile(n.Path("/etc/default/kubelet")); err == nil {
		args = append(args, strings.Fields(env["KUBELET_EXTRA_ARGS"])...)
	}
	n.startKubelet(t, args, []string{"PATH=" + n.path, "HOME=/root"})
}

// readEnvFile reads a systemd environment file's KEY=value lines (values
// in quotes or not).
func readEnvFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		key, value, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		env[strings.TrimSpace(key)] = value
	}
	return env, nil
}

// startKubelet starts args (args[0] found on env's PATH) in the node as a
// join script does, writing its pid to kubeletPidFile first, and returns
// once that names it.
func (n *Node) startKubelet(t testing.TB, args, env []string) {
	t.Helper()
	pidFile := filepath.Join(n.Dir, "var-lib-kubelet", "kubelet.pid")
	_ = os.Remove(pidFile)
	cmd := n.Command(context.Background(), "/bin/sh", append([]string{"-c", `echo $$ >` + kubeletPidFile + ` && exec "$0" "$@"`}, args...)...)
	cmd.Env = env
	p, err := startProcess("kubelet", filepath.Join(n.Dir, "kubelet.log"), cmd)
	if err != nil {
		t.Fatalf("testenv: node %s: %v", n.Name, err)
	}
	n.add(p)
	err = waitUntil(p, 10*time.Second, func() error {
		pid, err := n.kubeletPid()
		if err != nil {
			return err
		}
		host, err := n.hostPid(pid)
		if err != nil {
			return err
		}
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", host)); strings.TrimSpace(string(comm)) != "kubelet" {
			return errors.New("kubelet has not started yet")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("testenv: node %s: kubelet: %v\n%s", n.Name, err, fileTail(p.log, 4000))
	}
}

// kubeletPid is the pid (in the node) kubeletPidFile names.
func (n *Node) kubeletPid() (int, error) {
	b, err := os.ReadFile(filepath.Join(n.Dir, "var-lib-kubelet", "kubelet.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// hostPid is the host's pid of the node's process pid.
func (n *Node) hostPid(pid int) (int, error) {
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", n.init))
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	want := strconv.Itoa(pid)
	for _, e := range entries {
		host, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", host)); err != nil || l != ns {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", host))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "NSpid:" && f[len(f)-1] == want {
				return host, nil
			}
		}
	}
	return 0, fmt.Errorf("no process %d in the node", pid)
}

// StopKubelet kills the kubelet that /var/lib/kubelet/kubelet.pid in the
// node names (whoever started it), as a machine's kubelet stops, and
// remembers its command line and environment for StartKubelet. It returns
// once it is gone.
func (n *Node) StopKubelet(t testing.TB) {
	t.Helper()
	pid, err := n.kubeletPid()
	if err != nil {
		t.Fatalf("testenv: node %s: no kubelet pid file: %v", n.Name, err)
	}
	host, err := n.hostPid(pid)
	if err != nil {
		t.Fatalf("testenv: node %s: kubelet (pid %d in the node): %v", n.Name, pid, err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", host))
	if err != nil {
		t.Fatalf("testenv: node %s: kubelet's command line: %v", n.Name, err)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", host))
	if err != nil {
		t.Fatalf("testenv: node %s: kubelet's environment: %v", n.Name, err)
	}
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	if filepath.Base(args[0]) != "kubelet" {
		t.Fatalf("testenv: node %s: %s names pid %d, which runs %q, not kubelet", n.Name, kubeletPidFile, pid, args[0])
	}
	var env []string
	if len(environ) > 0 {
		env = strings.Split(strings.TrimSuffix(string(environ), "\x00"), "\x00")
	}
	if err := syscall.Kill(host, syscall.SIGKILL); err != nil {
		t.Fatalf("testenv: node %s: kill kubelet: %v", n.Name, err)
	}
	err = waitUntil(nil, 10*time.Second, func() error {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", host))
		if err != nil || strings.Contains(string(status), "\nState:\tZ") {
			return nil
		}
		return errors.New("kubelet still runs")
	})
	if err != nil {
		t.Fatalf("testenv: node %s: %v", n.Name, err)
	}
	n.mu.Lock()
	n.kubelet = &kubeletCommand{args: args, env: env}
	n.mu.Unlock()
}

// StartKubelet starts the kubelet StopKubelet stopped again, the same
// command line and environment, in the node (its pid in
// /var/lib/kubelet/kubelet.pid there, its log in Dir/kubelet.log).
func (n *Node) StartKubelet(t testing.TB) {
	t.Helper()
	n.mu.Lock()
	k := n.kubelet
	n.mu.Unlock()
	if k == nil {
		t.Fatalf("testenv: node %s: StartKubelet without StopKubelet first", n.Name)
	}
	env := k.env
	if !slices.ContainsFunc(env, func(s string) bool { return strings.HasPrefix(s, "PATH=") }) {
		env = append(env, "PATH="+n.path)
	}
	n.startKubelet(t, k.args, env)
}

// cleanup ends the node: its pid 1 killed, the kernel kills every other
// process of its pid namespace (kubelet, containerd, the shims and the
// containers, whose namespaces are nested in it) before it is gone; the
// mount namespace and its mounts go with the last of them, the network
// namespace with the link too. Then the cgroups and Dir go.
func (n *Node) cleanup(t testing.TB) {
	if t.Failed() && n.init != 0 {
		// kubelet.log is the harness's kubelet's; a join script's may be
		// in /var/lib/kubelet.
		for _, log := range []string{"kubelet.log", "var-lib-kubelet/kubelet.log", "containerd.log"} {
			path := filepath.Join(n.Dir, log)
			if _, err := os.Stat(path); err == nil {
				t.Logf("testenv: node %s: %s, its end:\n%s", n.Name, path, fileTail(path, 6000))
			}
		}
	}
	if n.init != 0 {
		_ = syscall.Kill(n.init, syscall.SIGKILL)
	} else if n.holder != nil {
		// Its child, if any, goes with it (--kill-child).
		_ = n.holder.Process.Kill()
	}
	if n.holder != nil {
		select {
		case <-n.holderDone:
		case <-time.After(30 * time.Second):
			t.Errorf("testenv: node %s: its pid 1 (%d) did not end", n.Name, n.init)
		}
	}
	n.mu.Lock()
	procs := n.procs
	n.mu.Unlock()
	for _, p := range procs {
		p.stop()
	}
	if n.link != "" {
		err := waitUntil(nil, 10*time.Second, func() error {
			l, err := netlink.LinkByName(n.link)
			if err != nil {
				return nil // gone
			}
			_ = netlink.LinkDel(l)
			return fmt.Errorf("link %s still there", n.link)
		})
		if err != nil {
			t.Errorf("testenv: node %s: %v", n.Name, err)
		}
	}
	for _, dir := range n.cgroups {
		if err := removeCgroup(dir, 10*time.Second); err != nil {
			t.Errorf("testenv: node %s: %v", n.Name, err)
		}
	}
	if err := os.RemoveAll(n.Dir); err != nil {
		t.Errorf("testenv: node %s: %v", n.Name, err)
	}
}
