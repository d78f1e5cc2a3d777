package ingress_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/helm"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestControllers installs each controller's real chart (Traefik 41.6.0
// and ingress-nginx 4.11.0, from their modules) into a real apiserver
// playing the virtual cluster: a DaemonSet with host ports 80 and 443 on
// the marked ingress nodes, the default IngressClass, no Service; then on
// every node once none is marked; a second apply changes nothing; removal
// leaves none of it, the chart's CRDs included. Each gets an apiserver of
// its own: a removed namespace stays terminating where no controller
// manager runs.
func TestControllers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		controller, class string
		chart             func(testing.TB) string
		kube              func(testing.TB) *testenv.Kube
		// crdGroup is a group of the chart's CRDs ("": it has none).
		crdGroup string
	}{
		{ingress.Traefik, ingress.Traefik, testenv.TraefikChart, testenv.HostKube, "traefik.io/v1alpha1"},
		{ingress.IngressNGINX, ingress.IngressNGINXClass, testenv.IngressNGINXChart, testenv.NewKube, ""},
	} {
		t.Run(tc.controller, func(t *testing.T) {
			t.Parallel()
			testController(t, tc.kube(t), tc.chart(t), tc.controller, tc.class, tc.crdGroup)
		})
	}
}

func testController(t *testing.T, kube *testenv.Kube, chartDir, controller, class, crdGroup string) {
	ctx := context.Background()
	client := kube.Client(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ch, err := loader.Load(chartDir)
	require.NoError(t, err)
	values := func(marked bool) map[string]any {
		v, err := ingress.Values(controller, marked)
		require.NoError(t, err)
		return v
	}

	out, err := ingress.Install(ctx, kube.Config, ch, values(true), logger)
	require.NoError(t, err)
	require.Equal(t, helm.Installed, out)
	list, err := client.AppsV1().DaemonSets(ingress.Namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1, "one DaemonSet")
	ds := list.Items[0]
	require.Equal(t, "true", ds.Spec.Template.Spec.NodeSelector[ingress.NodeLabel])
	hostPorts := map[int32]bool{}
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				hostPorts[p.HostPort] = true
			}
		}
	}
	require.Equal(t, map[int32]bool{80: true, 443: true}, hostPorts)
	ic, err := client.NetworkingV1().IngressClasses().Get(ctx, class, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "true", ic.Annotations["ingressclass.kubernetes.io/is-default-class"])
	svcs, err := client.CoreV1().Services(ingress.Namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, svcs.Items, "the nodes' addresses are the entry: no Service")

	// No node marked: every node.
	out, err = ingress.Install(ctx, kube.Config, ch, values(false), logger)
	require.NoError(t, err)
	require.Equal(t, helm.Upgraded, out)
	got, err := client.AppsV1().DaemonSets(ingress.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, got.Spec.Template.Spec.NodeSelector, ingress.NodeLabel)
	out, err = ingress.Install(ctx, kube.Config, ch, values(false), logger)
	require.NoError(t, err)
	require.Equal(t, helm.Unchanged, out)
	if crdGroup != "" {
		_, err = client.Discovery().ServerResourcesForGroupVersion(crdGroup)
		require.NoError(t, err, "the chart's CRDs are installed")
	}

	removed, err := ingress.Remove(ctx, kube.Config, ch, logger)
	require.NoError(t, err)
	require.True(t, removed)
	_, err = client.AppsV1().DaemonSets(ingress.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the DaemonSet is gone: %v", err)
	_, err = client.NetworkingV1().IngressClasses().Get(ctx, class, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the IngressClass is gone: %v", err)
	rels, err := helm.Releases(kube.Config, ingress.Namespace, ingress.ReleaseName, logger)
	require.NoError(t, err)
	require.Empty(t, rels)
	if crdGroup != "" {
		require.Eventually(t, func() bool {
			_, err := client.Discovery().ServerResourcesForGroupVersion(crdGroup)
			return apierrors.IsNotFound(err)
		}, 30*time.Second, 200*time.Millisecond, "the chart's CRDs are gone")
	}
	ns, err := client.CoreV1().Namespaces().Get(ctx, ingress.Namespace, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err) || ns.DeletionTimestamp != nil, "the namespace goes: %v", err)

	removed, err = ingress.Remove(ctx, kube.Config, ch, logger)
	require.NoError(t, err)
	require.False(t, removed, "nothing left to remove")
}

// TestValuesUnknownController names what it does not know.
func TestValuesUnknownController(t *testing.T) {
	t.Parallel()
	_, err := ingress.Values("haproxy-ingress", false)
	require.ErrorContains(t, err, `"haproxy-ingress"`)
}
