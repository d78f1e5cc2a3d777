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

// TestTraefikInstallAndRemove installs the real Traefik chart (41.6.0,
// from its module) into a real apiserver playing the virtual cluster: a
// DaemonSet with host ports 80 and 443 on the marked ingress nodes, the
// default IngressClass, no Service; then on every node once none is
// marked; a second apply changes nothing; removal leaves none of it, the
// chart's CRDs included.
func TestTraefikInstallAndRemove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube := testenv.HostKube(t)
	client := kube.Client(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ch, err := loader.Load(testenv.TraefikChart(t))
	require.NoError(t, err)

	out, err := ingress.Install(ctx, kube.Config, ch, ingress.TraefikValues(true), logger)
	require.NoError(t, err)
	require.Equal(t, helm.Installed, out)
	ds, err := client.AppsV1().DaemonSets(ingress.Namespace).Get(ctx, ingress.ReleaseName+"-traefik", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		list, lerr := client.AppsV1().DaemonSets(ingress.Namespace).List(ctx, metav1.ListOptions{})
		require.NoError(t, lerr)
		require.Len(t, list.Items, 1, "one DaemonSet")
		ds, err = &list.Items[0], nil
	}
	require.NoError(t, err)
	require.Equal(t, map[string]string{ingress.NodeLabel: "true"}, ds.Spec.Template.Spec.NodeSelector)
	hostPorts := map[string]int32{}
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				hostPorts[p.Name] = p.HostPort
			}
		}
	}
	require.Equal(t, map[string]int32{"web": 80, "websecure": 443}, hostPorts)
	class, err := client.NetworkingV1().IngressClasses().Get(ctx, ingress.Traefik, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "true", class.Annotations["ingressclass.kubernetes.io/is-default-class"])
	svcs, err := client.CoreV1().Services(ingress.Namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, svcs.Items, "the nodes' addresses are the entry: no Service")

	// No node marked: every node.
	out, err = ingress.Install(ctx, kube.Config, ch, ingress.TraefikValues(false), logger)
	require.NoError(t, err)
	require.Equal(t, helm.Upgraded, out)
	ds, err = client.AppsV1().DaemonSets(ingress.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Empty(t, ds.Spec.Template.Spec.NodeSelector)
	out, err = ingress.Install(ctx, kube.Config, ch, ingress.TraefikValues(false), logger)
	require.NoError(t, err)
	require.Equal(t, helm.Unchanged, out)

	crdName := "ingressroutes.traefik.io"
	_, err = client.Discovery().ServerResourcesForGroupVersion("traefik.io/v1alpha1")
	require.NoError(t, err, "the chart's CRDs are installed")

	removed, err := ingress.Remove(ctx, kube.Config, ch, logger)
	require.NoError(t, err)
	require.True(t, removed)
	_, err = client.AppsV1().DaemonSets(ingress.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the DaemonSet is gone: %v", err)
	_, err = client.NetworkingV1().IngressClasses().Get(ctx, ingress.Traefik, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the IngressClass is gone: %v", err)
	rels, err := helm.Releases(kube.Config, ingress.Namespace, ingress.ReleaseName, logger)
	require.NoError(t, err)
	require.Empty(t, rels)
	require.Eventually(t, func() bool {
		_, err := client.Discovery().ServerResourcesForGroupVersion("traefik.io/v1alpha1")
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 200*time.Millisecond, "the CRDs (%s and the rest) are gone", crdName)
	ns, err := client.CoreV1().Namespaces().Get(ctx, ingress.Namespace, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err) || ns.DeletionTimestamp != nil, "the namespace goes: %v", err)

	removed, err = ingress.Remove(ctx, kube.Config, ch, logger)
	require.NoError(t, err)
	require.False(t, removed, "nothing left to remove")
}
