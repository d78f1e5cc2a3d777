//go:build linux

package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kubeProxyHealthzPort is kube-proxy's health port in a node (its own
// network namespace, so no other process of the host competes for it).
const kubeProxyHealthzPort = 10256

// StartKubeProxy runs kube-proxy (NodeToolsDir) in the node, in iptables
// mode, as system:kube-proxy of cp (the default system:node-proxier
// binding gives it what it reads), so that the node and its pods reach
// Services by their ClusterIPs: the kubernetes Service too, when cp
// advertises an address the node reaches (ControlPlaneOptions.AdvertiseAddress).
// server is cp's URL as the node reaches it (a name in cp's certificate
// that the node resolves to HostIP: NodeOptions.HostAliases). Masquerading
// everything a Service gets (--masquerade-all) makes a pod's request to a
// Service whose endpoint is on the same bridge come back through the
// node, as the host has no br_netfilter to see bridged replies. It returns
// once kube-proxy has synced its rules (its /healthz answers 200); it stops
// with the node. Tests that need no Services leave it off: it costs a
// process and a sync per node.
func (n *Node) StartKubeProxy(t testing.TB, cp *ControlPlane, server string) {
	t.Helper()
	dir := filepath.Join(n.Dir, "kube-proxy")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("testenv: node %s: kube-proxy: %v", n.Name, err)
	}
	kc, err := kubeconfig(server, cp.CA, cp.kubeProxyCert[0], cp.kubeProxyCert[1], "system:kube-proxy")
	if err != nil {
		t.Fatalf("testenv: node %s: kube-proxy kubeconfig: %v", n.Name, err)
	}
	kcFile := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kcFile, kc, 0o600); err != nil {
		t.Fatalf("testenv: node %s: kube-proxy kubeconfig: %v", n.Name, err)
	}
	args := []string{
		"--kubeconfig", kcFile,
		"--proxy-mode", "iptables",
		"--hostname-override", n.Name,
		"--cluster-cidr", n.PodCIDR,
		"--masquerade-all",
		"--healthz-bind-address", "0.0.0.0:" + strconv.Itoa(kubeProxyHealthzPort),
		"--metrics-bind-address", "127.0.0.1:10249",
		// The conntrack table's size and timeouts are the host's (not a
		// network namespace's): 0 leaves them as they are.
		"--conntrack-max-per-core", "0",
		"--conntrack-tcp-timeout-established", "0",
		"--conntrack-tcp-timeout-close-wait", "0",
		"--iptables-sync-period", "10s",
		"--iptables-min-sync-period", "0s",
	}
	p, err := startProcess("kube-proxy", filepath.Join(n.Dir, "kube-proxy.log"), n.Command(context.Background(), "kube-proxy", args...))
	if err != nil {
		t.Fatalf("testenv: node %s: %v", n.Name, err)
	}
	n.add(p)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("testenv: node %s: kube-proxy log, its end:\n%s", n.Name, fileTail(p.log, 6000))
		}
	})
	// Its /healthz answers 200 from its start until a sync is overdue, so
	// the rules are what tells it synced: the kubernetes Service's chain.
	client := &http.Client{Timeout: 2 * time.Second}
	url := "http://" + net.JoinHostPort(n.IP, strconv.Itoa(kubeProxyHealthzPort)) + "/healthz"
	err = waitUntil(p, time.Minute, func() error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := n.Command(ctx, "iptables-save", "-t", "nat").CombinedOutput()
		if err != nil {
			return fmt.Errorf("iptables-save: %w: %s", err, out)
		}
		if !strings.Contains(string(out), "-A KUBE-SERVICES") {
			return errors.New("no Service rules in KUBE-SERVICES yet")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("testenv: node %s: kube-proxy: %v\n%s", n.Name, err, fileTail(p.log, 4000))
	}
}
