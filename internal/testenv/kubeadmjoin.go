//go:build linux

package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// JoinWithKubeadm joins node to cp as a user's machine joins a cluster
// made by kubeadm, and returns once its Node is Ready: the real kubeadm's
// phases make what `kubeadm join` needs in cp (run on the host against
// its admin kubeconfig: the kubeadm-config and kubelet-config ConfigMaps,
// the join RBAC, a bootstrap token and cluster-info), then `kubeadm join`
// runs in the node with the node's patches, and kubelet starts once
// kubeadm wrote its flags (no systemd to start it). endpointName is the
// name the node reaches cp at: one of cp's SANs, which the node resolves
// to its HostIP (NodeOptions.HostAliases).
func JoinWithKubeadm(t testing.TB, cp *ControlPlane, node *Node, endpointName string) {
	t.Helper()
	endpoint := net.JoinHostPort(endpointName, strconv.Itoa(cp.Port))
	token, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		t.Fatalf("testenv: join: %v", err)
	}
	dir, err := os.MkdirTemp(cp.Dir, "kubeadm-")
	if err != nil {
		t.Fatalf("testenv: join: %v", err)
	}
	admin := filepath.Join(dir, "admin.conf")
	kc, err := clientcmd.Load(cp.AdminKubeconfig)
	if err != nil {
		t.Fatalf("testenv: join: %v", err)
	}
	for _, c := range kc.Clusters {
		c.Server = "https://" + endpoint
	}
	if err := clientcmd.WriteToFile(*kc, admin); err != nil {
		t.Fatalf("testenv: join: %v", err)
	}
	// The phases run where endpointName is the host itself: a mount
	// namespace with an /etc/hosts of its own.
	hosts := filepath.Join(dir, "hosts")
	config := filepath.Join(dir, "kubeadm.yaml")
	err = os.WriteFile(hosts, []byte("127.0.0.1\tlocalhost "+endpointName+"\n"), 0o644)
	if err == nil {
		err = os.WriteFile(config, fmt.Appendf(nil, `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: %s
  ttl: 1h0m0s
  usages: [signing, authentication]
  groups: [system:bootstrappers:kubeadm:default-node-token]
nodeRegistration:
  criSocket: unix:///run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.34.2
controlPlaneEndpoint: %s
certificatesDir: /etc/kubernetes/pki
networking:
  serviceSubnet: 10.96.0.0/12
`, token, endpoint), 0o600)
	}
	if err != nil {
		t.Fatalf("testenv: join: %v", err)
	}
	kubeadm := filepath.Join(NodeToolsDir(t), "kubeadm")
	script := `mount --bind "$0" /etc/hosts && for phase in "upload-config kubeadm" "upload-config kubelet" bootstrap-token; do
	"$1" init phase $phase --config "$2" --kubeconfig "$3" || exit
done`
	if out, err := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, hosts, kubeadm, config, admin).CombinedOutput(); err != nil {
		t.Fatalf("testenv: join: kubeadm init phases: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"join", endpoint, "--token", token, "--discovery-token-ca-cert-hash", cp.CACertHash(), "--patches", node.KubeadmPatchesDir()}
	if ignore := node.KubeadmIgnorePreflightErrors(); ignore != "" {
		args = append(args, "--ignore-preflight-errors="+ignore)
	}
	join := node.Command(ctx, "kubeadm", args...)
	var out Output
	join.Stdout, join.Stderr = &out, &out
	if err := join.Start(); err != nil {
		t.Fatalf("testenv: join: %v", err)
	}
	joined := make(chan error, 1)
	go func() { joined <- join.Wait() }()
	flags := node.Path("/var/lib/kubelet/kubeadm-flags.env")
	for {
		if _, err := os.Stat(flags); err == nil {
			break
		}
		select {
		case err := <-joined:
			t.Fatalf("testenv: join: kubeadm join ended before it wrote kubeadm-flags.env: %v\n%s", err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	node.StartKubeletFromKubeadmFlags(t)
	select {
	case err := <-joined:
		if err != nil {
			t.Fatalf("testenv: join: kubeadm join: %v\n%s", err, out.String())
		}
	case <-ctx.Done():
		t.Fatalf("testenv: join: kubeadm join did not end:\n%s", out.String())
	}
	client := cp.Client(t)
	err = waitUntil(nil, 2*time.Minute, func() error {
		n, err := client.CoreV1().Nodes().Get(context.Background(), node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("node %s not Ready", node.Name)
	})
	if err != nil {
		t.Fatalf("testenv: join: %v", err)
	}
}
