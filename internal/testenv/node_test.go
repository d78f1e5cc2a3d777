//go:build linux

package testenv_test

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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestRealNodeJoins checks the real-node harness end to end, as a user's
// machine joins a hosted control plane: a control plane of its own, its
// kubeadm side made by the real kubeadm's phases, a machine joined by the
// real `kubeadm join` with a bootstrap token and going Ready, a pod of the
// hand-made busybox image running on it with its logs and exec working
// through the apiserver, and kubelet stopped (the Node goes Unknown within
// the control plane's grace period) and started again (Ready again).
func TestRealNodeJoins(t *testing.T) {
	t.Parallel()
	start := time.Now()
	step := func(what string) { t.Logf("%5.1fs %s", time.Since(start).Seconds(), what) }

	// The name the machine reaches the control plane at: in the serving
	// certificate, and resolved by the machine to the host.
	const endpointName = "cp.kubebyon.test"
	cp := testenv.StartControlPlane(t, testenv.ControlPlaneOptions{SANs: []string{endpointName}})
	step("control plane ready")
	node := testenv.NewNode(t, testenv.NodeOptions{Name: "worker-1", HostAliases: []string{endpointName}})
	step("node up: " + node.IP)
	endpoint := net.JoinHostPort(endpointName, strconv.Itoa(cp.Port))
	token := kubeadmControlPlaneSide(t, cp, endpoint)
	step("kubeadm's objects made in the control plane")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"join", endpoint, "--token", token, "--discovery-token-ca-cert-hash", cp.CACertHash(),
		"--patches", node.KubeadmPatchesDir()}
	if ignore := node.KubeadmIgnorePreflightErrors(); ignore != "" {
		args = append(args, "--ignore-preflight-errors="+ignore)
	}
	join := node.Command(ctx, "kubeadm", args...)
	var joinOut testenv.Output
	join.Stdout, join.Stderr = &joinOut, &joinOut
	require.NoError(t, join.Start())
	joined := make(chan error, 1)
	go func() { joined <- join.Wait() }()
	// kubeadm join waits for a kubelet, which with no systemd it cannot
	// start: the machine's join script does, once kubeadm wrote its flags.
	flags := node.Path("/var/lib/kubelet/kubeadm-flags.env")
	for {
		if _, err := os.Stat(flags); err == nil {
			break
		}
		select {
		case err := <-joined:
			t.Fatalf("kubeadm join ended before it wrote kubeadm-flags.env: %v\n%s", err, joinOut.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	node.StartKubeletFromKubeadmFlags(t)
	step("kubelet started")
	if b, err := os.ReadFile(flags); err == nil {
		t.Logf("kubeadm-flags.env: %s", b)
	}
	select {
	case err := <-joined:
		require.NoError(t, err, "kubeadm join:\n%s", joinOut.String())
	case <-ctx.Done():
		t.Fatalf("kubeadm join did not end:\n%s", joinOut.String())
	}
	t.Logf("kubeadm join:\n%s", joinOut.String())
	step("kubeadm join done")

	client := cp.Client(t)
	waitNodeReady(t, client, node.Name, corev1.ConditionTrue, 2*time.Minute)
	step("node Ready")
	n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v1.34.2", n.Status.NodeInfo.KubeletVersion)
	assert.Contains(t, n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: node.IP})

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:            "hello",
				Image:           testenv.NodeBusyboxImage,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"sh", "-c", "echo hello from $(hostname); exec sleep 3600"},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	_, err = client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		p, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if assert.NoError(c, err) {
			assert.Equal(c, corev1.PodRunning, p.Status.Phase, "pod status: %+v", p.Status)
			assert.Equal(c, node.Name, p.Spec.NodeName)
		}
	}, time.Minute, 200*time.Millisecond)
	step("pod running")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		logs, err := client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if assert.NoError(c, err) {
			assert.Equal(c, "hello from hello\n", string(logs))
		}
	}, 30*time.Second, 200*time.Millisecond)
	stdout, stderr, err := testenv.PodExec(ctx, cp.Config, pod.Namespace, pod.Name, "sh", "-c", "echo out; echo err >&2; cat /etc/hostname")
	require.NoError(t, err)
	assert.Equal(t, "out\nhello\n", stdout)
	assert.Equal(t, "err\n", stderr)
	step("logs and exec work")

	node.StopKubelet(t)
	waitNodeReady(t, client, node.Name, corev1.ConditionUnknown, time.Minute)
	step("kubelet stopped: node Unknown")
	node.StartKubelet(t)
	waitNodeReady(t, client, node.Name, corev1.ConditionTrue, time.Minute)
	step("kubelet started again: node Ready")
	// The new kubelet reports Ready before it has found its running pods
	// again.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		stdout, _, err := testenv.PodExec(ctx, cp.Config, pod.Namespace, pod.Name, "cat", "/etc/hostname")
		if assert.NoError(c, err) {
			assert.Equal(c, "hello\n", stdout)
		}
	}, 30*time.Second, 200*time.Millisecond)
	step("exec works again")
}

// kubeadmControlPlaneSide makes in cp what `kubeadm join` needs, with the
// real kubeadm's phases run on the host against its admin kubeconfig: the
// kubeadm-config and kubelet-config ConfigMaps, the join RBAC, a bootstrap
// token (which it returns) and cluster-info. cluster-info's server, which
// the joining machine goes on with after discovery, is the admin
// kubeconfig's: endpoint, which the host resolves to itself only in the
// mount namespace (with an /etc/hosts of its own) kubeadm runs in here. The
// phases write no files.
func kubeadmControlPlaneSide(t *testing.T, cp *testenv.ControlPlane, endpoint string) string {
	t.Helper()
	token, err := bootstraputil.GenerateBootstrapToken()
	require.NoError(t, err)
	dir := t.TempDir()
	admin := filepath.Join(dir, "admin.conf")
	kubeconfig, err := clientcmd.Load(cp.AdminKubeconfig)
	require.NoError(t, err)
	for _, c := range kubeconfig.Clusters {
		c.Server = "https://" + endpoint
	}
	require.NoError(t, clientcmd.WriteToFile(*kubeconfig, admin))
	host, _, err := net.SplitHostPort(endpoint)
	require.NoError(t, err)
	hosts := filepath.Join(dir, "hosts")
	require.NoError(t, os.WriteFile(hosts, []byte("127.0.0.1\tlocalhost "+host+"\n"), 0o644))
	config := filepath.Join(dir, "kubeadm.yaml")
	require.NoError(t, os.WriteFile(config, fmt.Appendf(nil, `apiVersion: kubeadm.k8s.io/v1beta4
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
`, token, endpoint), 0o600))
	kubeadm := filepath.Join(testenv.NodeToolsDir(t), "kubeadm")
	script := `mount --bind "$0" /etc/hosts && for phase in "upload-config kubeadm" "upload-config kubelet" bootstrap-token; do
	"$1" init phase $phase --config "$2" --kubeconfig "$3" || exit
done`
	out, err := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, hosts, kubeadm, config, admin).CombinedOutput()
	require.NoError(t, err, "kubeadm init phases:\n%s", out)
	return token
}

// waitNodeReady waits until the Node's Ready condition has status.
func waitNodeReady(t *testing.T, client kubernetes.Interface, name string, status corev1.ConditionStatus, timeout time.Duration) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if !assert.NoError(c, err) {
			return
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				assert.Equal(c, status, cond.Status, "Ready: %s: %s", cond.Reason, cond.Message)
				return
			}
		}
		c.Errorf("node %s has no Ready condition", name)
	}, timeout, 200*time.Millisecond)
}
