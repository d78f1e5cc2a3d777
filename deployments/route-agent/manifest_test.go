package routeagent_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// manifest is route-agent.yaml, decoded.
type manifest struct {
	namespace      corev1.Namespace
	serviceAccount corev1.ServiceAccount
	daemonSet      appsv1.DaemonSet
}

// readManifest decodes route-agent.yaml strictly: a field Kubernetes does
// not know, a kind other than the three expected or one twice fails.
func readManifest(t *testing.T) manifest {
	t.Helper()
	f, err := os.Open("route-agent.yaml")
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	var m manifest
	seen := map[string]bool{}
	r := yaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		j, err := yaml.ToJSON(doc)
		require.NoError(t, err)
		if string(bytes.TrimSpace(j)) == "null" {
			continue
		}
		var tm metav1.TypeMeta
		require.NoError(t, json.Unmarshal(j, &tm))
		kind := tm.APIVersion + " " + tm.Kind
		require.False(t, seen[kind], "%s twice", kind)
		seen[kind] = true
		var into any
		switch kind {
		case "v1 Namespace":
			into = &m.namespace
		case "v1 ServiceAccount":
			into = &m.serviceAccount
		case "apps/v1 DaemonSet":
			into = &m.daemonSet
		default:
			t.Fatalf("unexpected %s in the manifest (the agent needs no RBAC)", kind)
		}
		dec := json.NewDecoder(bytes.NewReader(j))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(into), kind)
	}
	require.Len(t, seen, 3)
	return m
}

// TestManifestRunsTheAgentOnEveryNode checks what the agent needs of its
// pods, and nothing more.
func TestManifestRunsTheAgentOnEveryNode(t *testing.T) {
	t.Parallel()
	m := readManifest(t)
	require.Equal(t, "kubebyon-system", m.namespace.Name)
	require.Equal(t, "privileged", m.namespace.Labels["pod-security.kubernetes.io/enforce"])
	require.Equal(t, "kubebyon-system", m.serviceAccount.Namespace)
	require.False(t, *m.serviceAccount.AutomountServiceAccountToken)

	ds := m.daemonSet
	require.Equal(t, "kubebyon-route-agent", ds.Name)
	require.Equal(t, "kubebyon-system", ds.Namespace)
	require.Subset(t, ds.Spec.Template.Labels, ds.Spec.Selector.MatchLabels)
	pod := ds.Spec.Template.Spec
	require.Equal(t, m.serviceAccount.Name, pod.ServiceAccountName)
	require.False(t, *pod.AutomountServiceAccountToken)
	require.True(t, pod.HostNetwork)
	require.Equal(t, corev1.DNSClusterFirstWithHostNet, pod.DNSPolicy)
	require.Equal(t, "system-node-critical", pod.PriorityClassName)
	require.Equal(t, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, pod.Tolerations, "every node, whatever its taints")

	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.Regexp(t, `^ghcr\.io/kubebyon/kubebyon:`, c.Image)
	require.Equal(t, []string{"route-agent"}, c.Args, "the image's entrypoint runs kubebyon")
	require.Empty(t, c.Ports)

	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	require.Len(t, env, 3)
	require.Equal(t, "spec.nodeName", env["NODE_NAME"].ValueFrom.FieldRef.FieldPath)
	token := env["KUBEBYON_EDGE_TOKEN"].ValueFrom.SecretKeyRef
	require.Equal(t, "kubebyon-route-agent", token.Name)
	require.Equal(t, "token", token.Key)
	require.Regexp(t, `^https://`, env["KUBEBYON_EDGE_PLATFORM_URL"].Value)

	sc := c.SecurityContext
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	require.Equal(t, []corev1.Capability{"NET_ADMIN"}, sc.Capabilities.Add)
	require.Equal(t, int64(0), *sc.RunAsUser, "an added capability takes effect for root only")
	require.False(t, *sc.RunAsNonRoot)
	require.False(t, *sc.AllowPrivilegeEscalation)
	require.True(t, *sc.ReadOnlyRootFilesystem)
	require.Nil(t, sc.Privileged)

	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		require.Contains(t, c.Resources.Requests, name)
		require.Contains(t, c.Resources.Limits, name)
	}
}

// TestManifestAppliesToKubernetes creates the manifest's objects on a real
// apiserver, which validates them.
func TestManifestAppliesToKubernetes(t *testing.T) {
	t.Parallel()
	m := readManifest(t)
	kube := testenv.HostKube(t).Client(t)
	ctx := t.Context()
	strict := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}

	_, err := kube.CoreV1().Namespaces().Create(ctx, &m.namespace, strict)
	require.NoError(t, err)
	_, err = kube.CoreV1().ServiceAccounts(m.serviceAccount.Namespace).Create(ctx, &m.serviceAccount, strict)
	require.NoError(t, err)
	_, err = kube.AppsV1().DaemonSets(m.daemonSet.Namespace).Create(ctx, &m.daemonSet, strict)
	require.NoError(t, err)
}
