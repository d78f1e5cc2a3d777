//go:build linux

package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A node with systemd as its init (NodeOptions.Systemd), as servers run:
// a Debian root file system of its own (systemdRoot), seen through an
// overlay whose upper layer is the node's, and systemd as its pid 1 with
// cgroups of a cgroup namespace of its own. It has neither a container
// runtime nor kubelet: the join script installs containerd from the
// machine's Debian mirror (PackageMirror.DebianURL) and kubelet and
// kubeadm from the Kubernetes one, and systemd runs them.

// systemdRootSuite and systemdRootPackages are the root file system's
// Debian release and packages: systemd and D-Bus (kubelet's systemd cgroup
// driver talks to it), what the join script and kubeadm use (apt, curl,
// gpg, iptables, iproute2, mount, kmod, conntrack, socat, ethtool), the
// CNI plugins, and containerd and runc, which are removed again once their
// .debs are kept (their dependencies stay).
const systemdRootSuite = "bookworm"

var systemdRootPackages = []string{
	"systemd", "dbus", "apt", "ca-certificates", "curl", "gpg", "iptables", "iproute2", "mount", "util-linux", "kmod",
	"procps", "conntrack", "socat", "ethtool", "containernetworking-plugins", "containerd", "runc",
}

// systemdRootRemoved are the packages the root file system had only for
// their .debs: what a Debian mirror gives the join script.
var systemdRootRemoved = []string{"containerd", "runc"}

var systemdRootOnce struct {
	sync.Mutex
	dir string
}

// systemdRoot is the directory of systemd nodes' root file system
// (root/) and the .debs of systemdRootRemoved (debs/): made once by
// mmdebstrap from Debian's mirror, and cached (like kube-apiserver) in the
// user's cache directory, keyed by the release and packages. Nodes use
// root/ read-only, as their overlay's lower layer.
func systemdRoot() (string, error) {
	systemdRootOnce.Lock()
	defer systemdRootOnce.Unlock()
	if systemdRootOnce.dir != "" {
		return systemdRootOnce.dir, nil
	}
	h := sha256.Sum256([]byte(systemdRootSuite + "\n" + strings.Join(systemdRootPackages, ",") + "\n" + strings.Join(systemdRootRemoved, ",")))
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "kubebyon", "node-root-"+hex.EncodeToString(h[:])[:16])
	made := func() bool {
		_, err := os.Stat(filepath.Join(dir, "root", "usr", "lib", "systemd", "systemd"))
		return err == nil
	}
	if made() {
		systemdRootOnce.dir = dir
		return dir, nil
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return "", errors.New("mmdebstrap not found: install the Debian package 'mmdebstrap'")
	}
	// Made under a name of its own and renamed: test binaries that make
	// it at the same time never use a half-made one.
	tmp := fmt.Sprintf("%s.tmp-%d", dir, os.Getpid())
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(filepath.Join(tmp, "debs"), 0o755); err != nil {
		return "", err
	}
	var keep []string
	for _, p := range systemdRootRemoved {
		keep = append(keep, fmt.Sprintf(`"$1"/var/cache/apt/archives/%s_*.deb`, p))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mmdebstrap", "--variant=minbase", "--include="+strings.Join(systemdRootPackages, ","),
		"--customize-hook=cp "+strings.Join(keep, " ")+" "+shellQuote(filepath.Join(tmp, "debs"))+"/",
		`--customize-hook=chroot "$1" apt-get purge -y -q `+strings.Join(systemdRootRemoved, " "),
		systemdRootSuite, filepath.Join(tmp, "root"))
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("mmdebstrap: %w: %s", err, tail(string(out), 4000))
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		if !made() {
			return "", err
		}
	}
	systemdRootOnce.dir = dir
	return dir, nil
}

// bootSystemd makes the node's root file system and boots systemd in it:
// the node's pid 1 (waiting in startHolder) joins the node's cgroups,
// makes a cgroup namespace, mounts its root, /proc, /sys, the cgroup
// hierarchies and /dev, and becomes systemd. It returns once systemd
// reports the system running.
func (n *Node) bootSystemd(opts NodeOptions, unshare string) error {
	cached, err := systemdRoot()
	if err != nil {
		return err
	}
	lower := filepath.Join(cached, "root")
	root, upper, work := filepath.Join(n.Dir, "root"), filepath.Join(n.Dir, "root-upper"), filepath.Join(n.Dir, "root-work")
	containerdRoot, kubeletDir := filepath.Join(n.Dir, "var-lib-containerd"), filepath.Join(n.Dir, "var-lib-kubelet")
	for _, dir := range []string{root, upper, work, containerdRoot, kubeletDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	// The machine's own files, in the overlay's upper layer.
	files := map[string]string{
		"etc/hostname":    n.Name + "\n",
		"etc/hosts":       string(n.hostsFile(opts)),
		"etc/resolv.conf": "# kubebyon test node: no name server; names are in /etc/hosts\n",
		// The pod network's configuration, as a network plugin writes it.
		"etc/cni/net.d/10-kubebyon.conflist": string(n.cniConflist()),
	}
	for path, content := range files {
		file := filepath.Join(upper, path)
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			return err
		}
	}
	// No console to log in on.
	if err := os.MkdirAll(filepath.Join(upper, "etc/systemd/system"), 0o755); err != nil {
		return err
	}
	if err := os.Symlink("/dev/null", filepath.Join(upper, "etc/systemd/system/console-getty.service")); err != nil {
		return err
	}
	if err := n.writeSysctlFiles(); err != nil {
		return err
	}
	console := filepath.Join(n.Dir, "console.log")
	if err := os.WriteFile(console, nil, 0o644); err != nil {
		return err
	}

	// The pid 1 joins the node's cgroups, whose cgroup namespace it then
	// makes: inside, they are the root.
	for _, dir := range n.cgroups {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(n.init)), 0o644); err != nil {
			return fmt.Errorf("move the node's pid 1 into %s: %w", dir, err)
		}
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	q := shellQuote
	var s strings.Builder
	s.WriteString("set -e\n")
	fmt.Fprintf(&s, "R=%s\n", q(root))
	fmt.Fprintf(&s, "mount -t overlay kubebyon-node -o %s \"$R\"\n", q(fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)))
	s.WriteString("mount -t tmpfs -o mode=0755 run \"$R\"/run && mount -t tmpfs -o mode=1777 tmp \"$R\"/tmp\n")
	// containerd's snapshots (once installed) on a file system that overlayfs takes as an
	// upper layer (not the root's overlay), and kubelet's directory where
	// the harness reads it.
	fmt.Fprintf(&s, "mkdir -p \"$R\"/var/lib/containerd \"$R\"/var/lib/kubelet \"$R\"%[3]s\nmount --bind %[1]s \"$R\"/var/lib/containerd\nmount --bind %[2]s \"$R\"/var/lib/kubelet\n",
		q(containerdRoot), q(kubeletDir), q(n.Dir))
	// The node's directory at its own path, for the files tests give
	// commands (kubeadm's patches, image archives).
	fmt.Fprintf(&s, "mount --bind %[1]s \"$R\"%[1]s\n", q(n.Dir))
	s.WriteString("mount -t proc proc \"$R\"/proc\n")
	for key := range nodeSysctls {
		fmt.Fprintf(&s, "mount --bind %s \"$R\"/proc/sys/%s\n", q(n.sysctlFile(key)), key)
	}
	s.WriteString("echo 1 >\"$R\"/proc/sys/net/ipv4/ip_forward\n")
	s.WriteString("mount -t sysfs -o ro sysfs \"$R\"/sys\n")
	if len(mounts) == 1 && mounts[0].v2 && mounts[0].path == "/sys/fs/cgroup" {
		// cgroup v2 alone (unified).
		mounts = nil
		s.WriteString("mount -t cgroup2 cgroup2 \"$R\"/sys/fs/cgroup\n")
	} else {
		s.WriteString("mount -t tmpfs -o mode=0755 cgroup \"$R\"/sys/fs/cgroup\n")
	}
	for _, m := range mounts {
		target := "\"$R\"/sys/fs/cgroup/" + q(filepath.Base(m.path))
		if m.v2 {
			fmt.Fprintf(&s, "mkdir -p %[1]s && mount -t cgroup2 cgroup2 %[1]s\n", target)
		} else {
			fmt.Fprintf(&s, "mkdir -p %[1]s && mount -t cgroup -o %[2]s cgroup %[1]s\n", target, q(m.options))
		}
	}
	// /dev: the host's harmless devices, /dev/kmsg for kubelet's OOM
	// watcher, a pty instance of its own, and the console a file in Dir.
	s.WriteString("mount -t tmpfs -o mode=0755 dev \"$R\"/dev\n")
	s.WriteString("for d in null zero full random urandom tty kmsg; do touch \"$R\"/dev/$d; mount --bind /dev/$d \"$R\"/dev/$d; done\n")
	s.WriteString("mkdir -p \"$R\"/dev/pts \"$R\"/dev/shm && mount -t devpts -o newinstance,ptmxmode=0666 devpts \"$R\"/dev/pts && ln -s pts/ptmx \"$R\"/dev/ptmx\n")
	s.WriteString("mount -t tmpfs -o mode=1777 shm \"$R\"/dev/shm\n")
	fmt.Fprintf(&s, "touch \"$R\"/dev/console && mount --bind %s \"$R\"/dev/console\n", q(console))
	fmt.Fprintf(&s, "hostname %s\n", q(n.Name))
	s.WriteString("cd \"$R\"\n")
	s.WriteString("exec chroot \"$R\" /usr/bin/env -i container=kubebyon /lib/systemd/systemd --log-target=console\n")
	mountScript := filepath.Join(n.Dir, "boot-root")
	if err := os.WriteFile(mountScript, []byte(s.String()), 0o644); err != nil {
		return err
	}
	boot := fmt.Sprintf("exec %s --cgroup /bin/sh %s\n", q(unshare), q(mountScript))
	if err := os.WriteFile(filepath.Join(n.Dir, "boot.tmp"), []byte(boot), 0o644); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(n.Dir, "boot.tmp"), filepath.Join(n.Dir, "boot")); err != nil {
		return err
	}

	// systemd up: every unit started (or failed, which fails the node).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = waitUntil(nil, 30*time.Second, func() error {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", n.init))
		if err == nil && strings.TrimSpace(string(b)) != "systemd" {
			err = fmt.Errorf("the node's pid 1 is %s, not systemd yet", strings.TrimSpace(string(b)))
		}
		return err
	})
	if err != nil {
		return err
	}
	var state []byte
	err = waitUntil(nil, 90*time.Second, func() error {
		state, _ = n.Command(ctx, "systemctl", "is-system-running", "--wait").Output()
		switch strings.TrimSpace(string(state)) {
		case "running":
			return nil
		case "degraded":
			failed, _ := n.Command(ctx, "systemctl", "--failed", "--no-pager").CombinedOutput()
			return fmt.Errorf("systemd: degraded: %s", failed)
		}
		return fmt.Errorf("systemd: %s", state)
	})
	return err
}
