//go:build linux

package testenv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

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
	// kubeadm's side in the control plane, `kubeadm join` in the node,
	// kubelet started from the flags kubeadm wrote (no systemd), Node Ready.
	testenv.JoinWithKubeadm(t, cp, node, endpointName)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := cp.Client(t)
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

// TestBareNodeWritesStayOnIt: what a bare node (a machine without
// Kubernetes' tools, where the join script installs packages) writes where
// packages, their caches and rpm's database (root's home on Debian) go is
// its own; the host sees none of it, so a test that stops halfway leaves
// the next run a clean machine.
func TestBareNodeWritesStayOnIt(t *testing.T) {
	t.Parallel()
	node := testenv.NewNode(t, testenv.NodeOptions{Name: "bare-writes", Bare: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("kubebyon-bare-node-%d", time.Now().UnixNano())
	for _, dir := range []string{"/usr/local", "/var/cache", "/var/lib", "/etc", "/root"} {
		path := filepath.Join(dir, name)
		out, err := node.Command(ctx, "sh", "-c", "echo node >"+path+" && cat "+path).CombinedOutput()
		require.NoError(t, err, "%s: %s", path, out)
		require.Equal(t, "node\n", string(out), path)
		_, err = os.Stat(path)
		require.ErrorIs(t, err, os.ErrNotExist, "the host has no %s", path)
	}
}
