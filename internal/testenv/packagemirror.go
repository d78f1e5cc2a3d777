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
// install runs one: the Debian and the RPM repository of one minor
// version, at core:/stable:/vX.Y/deb/ and .../rpm/, signed with a key of
// its own (deb/Release.key, rpm/repodata/repomd.xml.key), served over HTTP
// on all the host's addresses.
//
// Its kubelet and kubeadm packages hold NodeToolsDir's binaries and the
// files of pkgs.k8s.io's packages: kubelet's systemd unit and kubeadm's
// drop-in for it. Their dependencies are what every test machine has
// (pkgs.k8s.io's also want kubernetes-cni and cri-tools, which this mirror
// does not carry), so that apt or dnf installs them with no other
// repository.
type PackageMirror struct {
	// URL is what the admin sets as the mirror: http://HOST:PORT.
	URL string
	// DebianURL is a mirror of Debian's own packages that a machine
	// installs besides Kubernetes' (containerd and runc, as Debian ships
	// them: systemdRoot's), a flat repository signed with the same key
	// (Release.key): what a Debian machine without internet has as its apt
	// source.
	DebianURL string
	// Minor is the minor version it carries ("v1.34"); Version its Debian
	// packages' version ("1.34.2-1.1"), RPMVersion its RPM packages'
	// ("1.34.2-150500.1.1").
	Minor, Version, RPMVersion string

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

// mirrorPackage is one package the mirror builds, as a .deb and an .rpm.
type mirrorPackage struct {
	name, description string
	// depends is the .deb's Depends; requires the .rpm's Requires, which
	// names only the mirror's own packages (a RHEL-like machine's rpm
	// database may not know Debian's names).
	depends, requires string
	files             map[string]string // path in the package: a file to copy, or "=" then the content
}

// rpmRelease is the RPM packages' release, as pkgs.k8s.io's.
const rpmRelease = "150500.1.1"

// mirrorKeyName names the mirror's signing key.
const mirrorKeyName = "KubeBYON test package mirror <mirror@kubebyon.test>"

var kubeletVersion = regexp.MustCompile(`^Kubernetes v(\d+)\.(\d+)\.(\d+)\s*$`)

// StartPackageMirror builds the mirror's packages and repository and
// serves it for t, its URL naming host (a name the machines resolve to
// the host: NodeOptions.HostAliases). It needs dpkg-deb, gpg, rpmbuild,
// rpmsign and createrepo_c.
func StartPackageMirror(t testing.TB, host string) *PackageMirror {
	t.Helper()
	tools := NodeToolsDir(t)
	for _, b := range []struct{ name, pkg string }{
		{"dpkg-deb", "dpkg"}, {"gpg", "gpg"}, {"rpmbuild", "rpm"}, {"rpmsign", "rpm"}, {"createrepo_c", "createrepo-c"},
	} {
		if _, err := exec.LookPath(b.name); err != nil {
			t.Fatalf("testenv: package mirror: %s not found: install the Debian package '%s'", b.name, b.pkg)
		}
	}
	out, err := exec.Command(filepath.Join(tools, "kubelet"), "--version").Output()
	m := kubeletVersion.FindStringSubmatch(string(out))
	if err != nil || m == nil {
		t.Fatalf("testenv: package mirror: kubelet --version: %v: %q", err, out)
	}
	release := m[1] + "." + m[2] + "." + m[3]
	pm := &PackageMirror{Minor: "v" + m[1] + "." + m[2], Version: release + "-1.1", RPMVersion: release + "-" + rpmRelease}
	root := t.TempDir()
	if err := pm.build(root, tools); err != nil {
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
	pm.DebianURL = pm.URL + "/debian"
	return pm
}

// Requests are the paths the mirror was asked for, in order.
func (pm *PackageMirror) Requests() []string {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return append([]string(nil), pm.requests...)
}

// build writes the repositories into root: core:/stable:/vX.Y/ (repo) has
// deb/ (the packages under
// amd64/, their index Packages, Release signed as InRelease and
// Release.gpg, the key as Release.key) and rpm/ (the packages under
// x86_64/, signed, createrepo_c's repodata/ and the key as
// repodata/repomd.xml.key), as pkgs.k8s.io has them; debian/ has
// systemdRoot's .debs.
func (pm *PackageMirror) build(root, tools string) error {
	cached, err := systemdRoot()
	if err != nil {
		return err
	}
	repo := filepath.Join(root, "core:", "stable:", pm.Minor)
	pkgs := []mirrorPackage{
		{
			name: "kubelet", depends: "iptables, mount, util-linux",
			description: "Node agent for Kubernetes clusters",
			files: map[string]string{
				"usr/bin/kubelet":                        filepath.Join(tools, "kubelet"),
				"usr/lib/systemd/system/kubelet.service": "=" + kubeletUnit,
			},
		},
		{
			name: "kubeadm", depends: "kubelet", requires: "kubelet",
			description: "Command-line utility for administering a Kubernetes cluster",
			files: map[string]string{
				"usr/bin/kubeadm": filepath.Join(tools, "kubeadm"),
				"usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf": "=" + kubeadmDropIn,
			},
		},
	}
	deb, rpm := filepath.Join(repo, "deb"), filepath.Join(repo, "rpm")
	for _, dir := range []string{filepath.Join(deb, "amd64"), filepath.Join(rpm, "x86_64")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	work, err := os.MkdirTemp("", "kubebyon-mirror-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	gpg, key, err := mirrorKey(work)
	if err != nil {
		return err
	}
	defer gpg.stop()

	var stanzas []string
	for _, p := range pkgs {
		file, err := pm.buildDeb(p, work, deb)
		var stanza string
		if err == nil {
			stanza, err = debStanza(deb, file)
		}
		if err == nil {
			err = pm.buildRPM(p, work, rpm, gpg)
		}
		if err != nil {
			return fmt.Errorf("package %s: %w", p.name, err)
		}
		stanzas = append(stanzas, stanza)
	}
	if err := writeAptIndex(deb, stanzas, gpg, key); err != nil {
		return err
	}
	if err := debianRepo(filepath.Join(root, "debian"), filepath.Join(cached, "debs"), gpg, key); err != nil {
		return err
	}

	if out, err := exec.Command("createrepo_c", "--quiet", rpm).CombinedOutput(); err != nil {
		return fmt.Errorf("createrepo_c: %w: %s", err, out)
	}
	return os.WriteFile(filepath.Join(rpm, "repodata", "repomd.xml.key"), key, 0o644)
}

// buildDeb builds p with dpkg-deb into repo/amd64 and returns its path in
// repo.
func (pm *PackageMirror) buildDeb(p mirrorPackage, work, repo string) (string, error) {
	tree := filepath.Join(work, "deb-"+p.name)
	if err := p.writeFiles(tree); err != nil {
		return "", err
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
	return file, nil
}

// debStanza is the index stanza of the package at file in repo: its
// control fields, then where it is, its size and digest.
func debStanza(repo, file string) (string, error) {
	control, err := exec.Command("dpkg-deb", "--field", filepath.Join(repo, file)).Output()
	if err != nil {
		return "", fmt.Errorf("dpkg-deb --field %s: %w", file, err)
	}
	f, err := os.Open(filepath.Join(repo, file))
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

// debianRepo makes repo a flat apt repository of the .debs in debs.
func debianRepo(repo, debs string, gpg *gpgHome, key []byte) error {
	files, err := filepath.Glob(filepath.Join(debs, "*.deb"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no .debs in %s: %v", debs, err)
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return err
	}
	var stanzas []string
	for _, f := range files {
		name := filepath.Base(f)
		if err := copyExecutable(f, filepath.Join(repo, name)); err != nil {
			return err
		}
		stanza, err := debStanza(repo, name)
		if err != nil {
			return err
		}
		stanzas = append(stanzas, stanza)
	}
	return writeAptIndex(repo, stanzas, gpg, key)
}

// writeAptIndex makes repo a flat apt repository of the stanzas' packages:
// Packages, Release signed as InRelease and Release.gpg, and the key as
// Release.key.
func writeAptIndex(repo string, stanzas []string, gpg *gpgHome, key []byte) error {
	index := []byte(strings.Join(stanzas, "\n"))
	if err := os.WriteFile(filepath.Join(repo, "Packages"), index, 0o644); err != nil {
		return err
	}
	sum := sha256.Sum256(index)
	// Dated a minute back: apt refuses a Release "not valid yet".
	release := fmt.Sprintf("Origin: KubeBYON tests\nLabel: package mirror (tests)\nArchitectures: amd64 all\nDate: %s\nSHA256:\n %s %d Packages\n",
		time.Now().UTC().Add(-time.Minute).Format(time.RFC1123), hex.EncodeToString(sum[:]), len(index))
	releaseFile := filepath.Join(repo, "Release")
	if err := os.WriteFile(releaseFile, []byte(release), 0o644); err != nil {
		return err
	}
	if _, err := gpg.run("--clearsign", "-o", filepath.Join(repo, "InRelease"), releaseFile); err != nil {
		return err
	}
	if _, err := gpg.run("--detach-sign", "--armor", "-o", filepath.Join(repo, "Release.gpg"), releaseFile); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(repo, "Release.key"), key, 0o644)
}

// writeFiles writes p's files under tree.
func (p mirrorPackage) writeFiles(tree string) error {
	for path, src := range p.files {
		dst := filepath.Join(tree, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		var err error
		if content, ok := strings.CutPrefix(src, "="); ok {
			err = os.WriteFile(dst, []byte(content), 0o644)
		} else {
			err = copyExecutable(src, dst)
		}
		if err != nil {
			return err
		}
	}
	return nil
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

// buildRPM builds p with rpmbuild into repo/x86_64 and signs it with the
// mirror's key.
func (pm *PackageMirror) buildRPM(p mirrorPackage, work, repo string, gpg *gpgHome) error {
	top := filepath.Join(work, "rpm-"+p.name)
	tree := filepath.Join(top, "tree")
	if err := p.writeFiles(tree); err != nil {
		return err
	}
	var files strings.Builder
	for path := range p.files {
		files.WriteString("/" + path + "\n")
	}
	version, _, _ := strings.Cut(pm.Version, "-")
	requires := ""
	if p.requires != "" {
		requires = "Requires: " + p.requires + "\n"
	}
	// The files are put in place as they are: no stripping, no debug
	// package, no dependencies read off the binaries (the machine's rpm
	// database may not know the libraries).
	spec := fmt.Sprintf(`Name: %s
Version: %s
Release: %s
Summary: %s
License: Apache-2.0
URL: https://kubernetes.io
BuildArch: x86_64
AutoReqProv: no
%s%%define debug_package %%{nil}
%%define __os_install_post %%{nil}
%%define _build_id_links none
%%description
%s
%%install
cp -a %s/. %%{buildroot}/
%%files
%s`, p.name, version, rpmRelease, p.description, requires, p.description, tree, files.String())
	specFile := filepath.Join(top, p.name+".spec")
	if err := os.WriteFile(specFile, []byte(spec), 0o644); err != nil {
		return err
	}
	// Uncompressed payload, as the .deb.
	cmd := exec.Command("rpmbuild", "--define", "_topdir "+top, "--define", "_binary_payload w.ufdio", "-bb", specFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("rpmbuild: %w: %s", err, out)
	}
	name := fmt.Sprintf("%s-%s-%s.x86_64.rpm", p.name, version, rpmRelease)
	dst := filepath.Join(repo, "x86_64", name)
	if err := os.Rename(filepath.Join(top, "RPMS", "x86_64", name), dst); err != nil {
		return err
	}
	sign := exec.Command("rpmsign", "--define", "__gpg "+gpg.bin, "--define", "_gpg_name "+mirrorKeyName,
		"--define", "_gpg_sign_cmd_extra_args --batch --pinentry-mode loopback --passphrase ''", "--addsign", dst)
	sign.Env = gpg.env()
	if out, err := sign.CombinedOutput(); err != nil {
		return fmt.Errorf("rpmsign: %w: %s", err, out)
	}
	return nil
}

// gpgHome is a keyring of the mirror's own.
type gpgHome struct {
	bin, dir string
}

func (g *gpgHome) env() []string { return append(os.Environ(), "GNUPGHOME="+g.dir) }

// run runs gpg on the keyring, with no passphrase.
func (g *gpgHome) run(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.bin, append([]string{"--batch", "--no-tty", "--yes", "--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
	cmd.Env = g.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gpg %s: %w: %s", args[0], err, stderr.Bytes())
	}
	return out, nil
}

// stop ends the agent gpg started for the keyring.
func (g *gpgHome) stop() {
	cmd := exec.Command("gpgconf", "--kill", "gpg-agent")
	cmd.Env = g.env()
	_ = cmd.Run()
}

// mirrorKey makes the mirror's signing key (RSA: rpm checks RSA
// signatures everywhere) in a keyring under work, and returns the keyring
// and the public key (armored).
func mirrorKey(work string) (*gpgHome, []byte, error) {
	bin, err := exec.LookPath("gpg")
	if err != nil {
		return nil, nil, err
	}
	g := &gpgHome{bin: bin, dir: filepath.Join(work, "gnupg")}
	if err := os.Mkdir(g.dir, 0o700); err != nil {
		return nil, nil, err
	}
	if _, err := g.run("--quick-gen-key", mirrorKeyName, "rsa3072", "sign", "never"); err != nil {
		g.stop()
		return nil, nil, err
	}
	key, err := g.run("--armor", "--export")
	if err == nil && len(key) == 0 {
		err = errors.New("gpg exported no key")
	}
	if err != nil {
		g.stop()
		return nil, nil, err
	}
	return g, key, nil
}
