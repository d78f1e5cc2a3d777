package vcluster_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/helm"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func testRuntime(t *testing.T) settings.Runtime {
	rt := settings.Defaults()
	rt.APIBaseDomain = "k.example.com"
	rt.ChartPath = testenv.VClusterChart(t)
	rt.PlatformHost = "platform.example.com"
	rt.PlatformAccessKey = "access-key"
	return rt
}

// TestValuesMatchChartSchema checks our values against the real chart's
// values.schema.json, in both access modes.
func TestValuesMatchChartSchema(t *testing.T) {
	t.Parallel()
	rt := testRuntime(t)
	ch, err := (&vcluster.Charts{}).Load(rt)
	require.NoError(t, err)
	for _, mode := range []string{"nodeport", "loadbalancer"} {
		c := queries.Cluster{ID: 7, Name: "schema", Slug: "schema-x1y2z3", KubernetesVersion: "v1.34.0", PublicAccessMode: mode}
		if mode == "nodeport" {
			c.NodePort = pgtype.Int4{Int32: 31000, Valid: true}
			c.KonnectivityNodePort = pgtype.Int4{Int32: 31001, Valid: true}
		}
		values, err := vcluster.Values(c, rt)
		require.NoError(t, err)
		require.NoError(t, chartutil.ValidateAgainstSchema(ch, values), mode)
	}
}

// TestInstallUpgradeUninstall installs the real chart into the real
// apiserver and checks the objects it made.
func TestInstallUpgradeUninstall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube := testenv.HostKube(t)
	client := kube.Client(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt := testRuntime(t)
	charts := &vcluster.Charts{}
	ch, err := charts.Load(rt)
	require.NoError(t, err)

	c := queries.Cluster{ID: 42, Name: "helm", Slug: "helm-abc123", KubernetesVersion: "v1.34.0", PublicAccessMode: "nodeport", NodePort: pgtype.Int4{Int32: 31443, Valid: true}, KonnectivityNodePort: pgtype.Int4{Int32: 31444, Valid: true}}
	ns := vcluster.Namespace(c)
	require.NoError(t, vcluster.EnsureNamespace(ctx, client, c))
	require.NoError(t, vcluster.EnsurePlatformSecret(ctx, client, c, rt))
	values, err := vcluster.Values(c, rt)
	require.NoError(t, err)

	out, err := charts.Apply(ctx, kube.Config, ns, vcluster.ReleaseName(c), ch, values, logger)
	require.NoError(t, err)
	require.Equal(t, helm.Installed, out)

	sts, err := client.AppsV1().StatefulSets(ns).Get(ctx, "helm", metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, sts.Spec.Template.Spec.Containers[0].Image, "vcluster-pro:0.30.0")
	svc, err := client.CoreV1().Services(ns).Get(ctx, "helm", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.ServiceTypeNodePort, svc.Spec.Type)
	// Every NodePort is the platform's: none picked at random by the host.
	ports := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		ports[p.Name] = p.NodePort
	}
	require.Equal(t, map[string]int32{"https": 31443, "konnectivity": 31444}, ports)
	_, err = client.CoreV1().Secrets(ns).Get(ctx, vcluster.PlatformSecretName, metav1.GetOptions{})
	require.NoError(t, err)
	roles, err := client.RbacV1().Roles(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, roles.Items, "the chart's RBAC")

	// The same values again: no new revision.
	out, err = charts.Apply(ctx, kube.Config, ns, "helm", ch, values, logger)
	require.NoError(t, err)
	require.Equal(t, helm.Unchanged, out)

	// Loadbalancer mode: an upgrade.
	c.PublicAccessMode, c.NodePort, c.KonnectivityNodePort = "loadbalancer", pgtype.Int4{}, pgtype.Int4{}
	values, err = vcluster.Values(c, rt)
	require.NoError(t, err)
	out, err = charts.Apply(ctx, kube.Config, ns, "helm", ch, values, logger)
	require.NoError(t, err)
	require.Equal(t, helm.Upgraded, out)
	svc, err = client.CoreV1().Services(ns).Get(ctx, "helm", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.ServiceTypeLoadBalancer, svc.Spec.Type)
	for _, p := range svc.Spec.Ports {
		require.Zero(t, p.NodePort, "a load balancer without node ports")
	}
	rels, err := helm.Releases(kube.Config, ns, "helm", logger)
	require.NoError(t, err)
	require.Len(t, rels, 2)

	removed, err := helm.Uninstall(kube.Config, ns, "helm", logger)
	require.NoError(t, err)
	require.True(t, removed)
	_, err = client.AppsV1().StatefulSets(ns).Get(ctx, "helm", metav1.GetOptions{})
	require.Error(t, err)
	removed, err = helm.Uninstall(kube.Config, ns, "helm", logger)
	require.NoError(t, err)
	require.False(t, removed, "uninstalling twice is fine")
}

// TestChartsApplyChecksValues checks that Charts.Apply, which compiles the
// chart's values schema once and tells Helm to skip its own check, refuses
// the values Helm refuses, and installs the ones Helm takes.
func TestChartsApplyChecksValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube := testenv.HostKube(t)
	client := kube.Client(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt := testRuntime(t)
	charts := &vcluster.Charts{}
	ch, err := charts.Load(rt)
	require.NoError(t, err)
	require.NotNil(t, ch.Schema, "the chart has a values schema to check against")

	c := queries.Cluster{ID: 43, Name: "checked", Slug: "checked-abc123", KubernetesVersion: "v1.34.0", PublicAccessMode: "loadbalancer"}
	ns := vcluster.Namespace(c)
	require.NoError(t, vcluster.EnsureNamespace(ctx, client, c))
	require.NoError(t, vcluster.EnsurePlatformSecret(ctx, client, c, rt))
	good, err := vcluster.Values(c, rt)
	require.NoError(t, err)

	bad := []map[string]any{
		{"noSuchSetting": true},
		{"controlPlane": map[string]any{"distro": map[string]any{"k8s": map[string]any{"enabled": "yes"}}}},
	}
	for _, values := range bad {
		require.Error(t, chartutil.ValidateAgainstSchema(ch, values), "Helm refuses %v", values)
		_, err := charts.Apply(ctx, kube.Config, ns, vcluster.ReleaseName(c), ch, values, logger)
		require.ErrorContains(t, err, "values do not match the schema of chart vcluster", "%v", values)
	}
	out, err := charts.Apply(ctx, kube.Config, ns, vcluster.ReleaseName(c), ch, good, logger)
	require.NoError(t, err)
	require.Equal(t, helm.Installed, out)
	out, err = charts.Apply(ctx, kube.Config, ns, vcluster.ReleaseName(c), ch, good, logger)
	require.NoError(t, err)
	require.Equal(t, helm.Unchanged, out)
}
