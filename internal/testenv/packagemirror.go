//go:build linux

package testenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// PackageMirror is a mirror of the Kubernetes package repository
// (pkgs.k8s.io) for the tests' machines, as an admin of an air-gapped
// install runs one: the Debian repository of one minor version at
// core:/stable:/vX.Y/deb/, signed with a key of its own (Release.key,
// InRelease), served over HTTP on all the host's addresses.
//
// Its kubelet and kubeadm packages hold NodeToolsDir's binaries and the
// files of pkgs.k8s.io's packages: kubelet's systemd unit and kubeadm's
// drop-in for it. Their dependencies are what every test machine has
// (pkgs.k8s.io's also want kubernetes-cni and cri-tools, which this mirror
// does not carry), so that apt installs them with no other repository.
type PackageMirror struct {
	// URL is what the admin sets as the mirror: http://HOST:PORT.
	URL string
	// Minor is the minor version it carries ("v1.34"); Version its
	// packages' version ("1.34.2-1.1").
	Minor, Version string

	mu       sync.Mutex
	requests []string
}

// Kubelet's unit and kubeadm's drop-in, as pkgs.k8s.io's packages ship
// them.
const (
	kubeletUnit = `[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
`
	kubeadmDropIn = `# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# This is a file that "kubeadm init" and "kubeadm join" generates at runtime, populating the KUBELET_KUBEADM_ARGS variable dynamically
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# This is a file that the user can use for overrides of the kubelet args as a last resort.
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`
)

// debPackage is one package the mirror builds.
type debPackage struct {
	name, depends, description string
	files                      map[string]string // path in the package: a file to copy, or "=" then the content
}

var kubeletVersion = regexp.MustCompile(`^Kubernetes v(\d+)\.(\d+)\.(\d+)\s*$`)

// StartPackageMirror builds the mirror's packages and repository and
// serves it for t, its URL naming host (a name the machines resolve to
// the host: NodeOptions.HostAliases). It needs dpkg-deb and gpg.
func StartPackageMirror(t testing.TB, host string) *PackageMirror {
	t.Helper()
	tools := NodeToolsDir(t)
	for _, b := range []struct{ name, pkg string }{{"dpkg-deb", "dpkg"}, {"gpg", "gpg"}} {
		if _, err := exec.LookPath(b.name); err != nil {
			t.Fatalf("testenv: package mirror: %s not found: install the Debian package '%s'", b.name, b.pkg)
		}
	}
	out, err := exec.Command(filepath.Join(tools, "kubelet"), "--version").Output()
	m := kubeletVersion.FindStringSubmatch(string(out))
	if err != nil || m == nil {
		t.Fatalf("testenv: package mirror: kubelet --version: %v: %q", err, out)
	}
	pm := &PackageMirror{Minor: "v" + m[1] + "." + m[2], Version: m[1] + "." + m[2] + "." + m[3] + "-1.1"}
	root := t.TempDir()
	repo := filepath.Join(root, "core:", "stable:", pm.Minor, "deb")
	if err := pm.build(repo, tools); err != nil {
		t.Fatalf("testenv: package mirror: %v", err)
	}

	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatalf("testenv: package mirror: %v", err)
	}
	files := http.FileServer(http.Dir(root))
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pm.mu.Lock()
		pm.requests = append(pm.requests, r.URL.Path)
		pm.mu.Unlock()
		files.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	pm.URL = "http://" + net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	return pm
}

// Requests are the paths the mirror was asked for, in order.
func (pm *PackageMirror) Requests() []string {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return append([]string(nil), pm.requests...)
}

// build writes the repository into repo: the packages under amd64/, their
// index (Packages), Release signed (InRelease, Release.gpg) and the key
// (Release.key).
func (pm *PackageMirror) build(repo, tools string) error {
	pkgs := []debPackage{
		{
			name: "kubelet", depends: "iptables, mount, util-linux",
			description: "Node agent for Kubernetes clusters",
			files: map[string]string{
				"usr/bin/kubelet":                        filepath.Join(tools, "kubelet"),
				"usr/lib/systemd/system/kubelet.service": "=" + kubeletUnit,
			},
		},
		{
			name: "kubeadm", depends: "kubelet",
			description: "Command-line utility for administering a Kubernetes cluster",
			files: map[string]string{
				"usr/bin/kubeadm": filepath.Join(tools, "kubeadm"),
				"usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf": "=" + kubeadmDropIn,
			},
		},
	}
	if err := os.MkdirAll(filepath.Join(repo, "amd64"), 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "kubebyon-mirror-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var index bytes.Buffer
	for _, p := range pkgs {
		stanza, err := pm.buildDeb(p, work, repo)
		if err != nil {
			return fmt.Errorf("package %s: %w", p.name, err)
		}
		index.WriteString(stanza + "\n")
	}
	if err := os.WriteFile(filepath.Join(repo, "Packages"), index.Bytes(), 0o644); err != nil {
		return err
	}
	sum := sha256.Sum256(index.Bytes())
	// Dated a minute back: apt refuses a Release "not valid yet".
	release := fmt.Sprintf("Origin: KubeBYON tests\nLabel: Kubernetes package mirror (tests)\nArchitectures: amd64\nDate: %s\nSHA256:\n %s %d Packages\n",
		time.Now().UTC().Add(-time.Minute).Format(time.RFC1123), hex.EncodeToString(sum[:]), index.Len())
	if err := os.WriteFile(filepath.Join(repo, "Release"), []byte(release), 0o644); err != nil {
		return err
	}
	return signRelease(work, repo)
}

// buildDeb builds p with dpkg-deb into repo/amd64 and returns its stanza
// of the index.
func (pm *PackageMirror) buildDeb(p debPackage, work, repo string) (string, error) {
	tree := filepath.Join(work, p.name)
	for path, src := range p.files {
		dst := filepath.Join(tree, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		var err error
		if content, ok := strings.CutPrefix(src, "="); ok {
			err = os.WriteFile(dst, []byte(content), 0o644)
		} else {
			err = copyExecutable(src, dst)
		}
		if err != nil {
			return "", err
		}
	}
	control := fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: amd64\nMaintainer: KubeBYON tests <tests@kubebyon.test>\nDepends: %s\nSection: admin\nPriority: optional\nHomepage: https://kubernetes.io\nDescription: %s\n",
		p.name, pm.Version, p.depends, p.description)
	if err := os.MkdirAll(filepath.Join(tree, "DEBIAN"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tree, "DEBIAN", "control"), []byte(control), 0o644); err != nil {
		return "", err
	}
	file := fmt.Sprintf("amd64/%s_%s_amd64.deb", p.name, pm.Version)
	deb := filepath.Join(repo, file)
	// Uncompressed: the binaries are 100 MB each, and the machines get
	// them over loopback.
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "-Znone", "--build", tree, deb).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb: %w: %s", err, out)
	}
	f, err := os.Open(deb)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%sFilename: %s\nSize: %d\nSHA256: %s\n", control, file, size, hex.EncodeToString(h.Sum(nil))), nil
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// signRelease makes a signing key in a keyring of its own (under work)
// and signs repo's Release with it: InRelease (inline) and Release.gpg
// (detached), the key itself as Release.key, as pkgs.k8s.io has them.
func signRelease(work, repo string) error {
	home := filepath.Join(work, "gnupg")
	if err := os.Mkdir(home, 0o700); err != nil {
		return err
	}
	gpg := func(args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "gpg", append([]string{"--batch", "--no-tty", "--yes", "--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
		cmd.Env = append(os.Environ(), "GNUPGHOME="+home)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("gpg %s: %w: %s", args[0], err, stderr.Bytes())
		}
		return out, nil
	}
	// The agent gpg starts for the key goes with the keyring.
	defer func() {
		cmd := exec.Command("gpgconf", "--kill", "gpg-agent")
		cmd.Env = append(os.Environ(), "GNUPGHOME="+home)
		_ = cmd.Run()
	}()
	release := filepath.Join(repo, "Release")
	_, err := gpg("--quick-gen-key", "KubeBYON test package mirror <mirror@kubebyon.test>", "ed25519", "sign", "never")
	if err == nil {
		_, err = gpg("--clearsign", "-o", filepath.Join(repo, "InRelease"), release)
	}
	if err == nil {
		_, err = gpg("--detach-sign", "--armor", "-o", filepath.Join(repo, "Release.gpg"), release)
	}
	var key []byte
	if err == nil {
		key, err = gpg("--armor", "--export")
	}
	if err == nil && len(key) == 0 {
		err = errors.New("gpg exported no key")
	}
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(repo, "Release.key"), key, 0o644)
}
