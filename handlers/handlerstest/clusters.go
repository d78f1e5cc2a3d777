package handlerstest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/helm"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// SetIngressSettings is the admin's managed ingress settings: the real
// Traefik chart, and apps under apps.test.
func (b *Bundle) SetIngressSettings(t *testing.T) {
	t.Helper()
	st := ingress.DefaultSettings()
	st.ChartPath = testenv.TraefikChart(t)
	st.CertManagerChartPath = testenv.CertManagerChart(t)
	st.AppsBaseDomain = "apps.test"
	require.NoError(t, ingress.SaveSettings(context.Background(), queries.New(b.Pool), st))
}

// WorkIngress runs one attempt of the cluster's managed ingress
// reconcile, as the worker of the clusters queue would, and says how it
// ended.
func (b *Bundle) WorkIngress(t *testing.T, clusterID int64) river.EventKind {
	t.Helper()
	ctx := context.Background()
	w := rivertest.NewWorker(t, riverpgxv5.New(b.Pool), &river.Config{}, &jobs.IngressReconcileWorker{
		Pool: b.Pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Charts: &helm.Charts{}, Box: b.Box,
		VirtualConfig: (&clusters.Service{Pool: b.Pool, Box: b.Box, KubeconfigPath: b.HostKubeconfig}).VirtualConfig,
	})
	tx, err := b.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	res, err := w.Work(ctx, t, tx, ingress.ReconcileArgs{ClusterID: clusterID}, nil)
	require.NoError(t, err)
	return res.EventKind
}

// ConnectHost makes the shared test apiserver the host cluster, as
// KUBEBYON_KUBECONFIG names it, and sets the API base domain and versions.
func (b *Bundle) ConnectHost(t *testing.T) {
	t.Helper()
	require.NoError(t, os.WriteFile(b.HostKubeconfig, testenv.HostKube(t).Kubeconfig(t), 0o600))
	rt := settings.Defaults()
	rt.NodePortMin, rt.NodePortMax = testenv.NodePorts()
	rt.APIBaseDomain = "clusters.test"
	rt.AllowedVersions = []string{"v1.34.0", "v1.33.4"}
	require.NoError(t, settings.Save(context.Background(), queries.New(b.Pool), b.Box, rt))
}

// NewClusterWith creates a cluster with the form's fields added to a
// version and an access mode, and returns it.
func (b *Bundle) NewClusterWith(t *testing.T, c *Client, fields url.Values) queries.Cluster {
	t.Helper()
	form := url.Values{"kubernetes_version": {"v1.34.0"}, "public_access_mode": {"nodeport"}}
	for k, v := range fields {
		form[k] = v
	}
	resp := c.CreateCluster(form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, ReadBody(t, resp))
	m := ClusterLocation.FindStringSubmatch(resp.Header.Get("Location"))
	require.NotNil(t, m, resp.Header.Get("Location"))
	id, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	return b.Cluster(t, id)
}

// ClusterLocation finds a cluster's id in the redirect to its page.
var ClusterLocation = regexp.MustCompile(`^/clusters/(\d+)$`)

// NewCluster creates a cluster through the form and returns its row.
func (b *Bundle) NewCluster(t *testing.T, c *Client, name string) queries.Cluster {
	t.Helper()
	resp := c.CreateCluster(url.Values{"name": {name}, "kubernetes_version": {"v1.34.0"}, "public_access_mode": {"nodeport"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, ReadBody(t, resp))
	m := ClusterLocation.FindStringSubmatch(resp.Header.Get("Location"))
	require.NotNil(t, m, resp.Header.Get("Location"))
	id, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	return b.Cluster(t, id)
}

// Cluster reads a cluster's row.
func (b *Bundle) Cluster(t *testing.T, id int64) queries.Cluster {
	t.Helper()
	cl, err := queries.New(b.Pool).ClusterGetByID(context.Background(), id)
	require.NoError(t, err)
	return cl
}

// Event plays the reconcile worker writing an event.
func (b *Bundle) Event(t *testing.T, id int64, level, reason, message string) {
	t.Helper()
	_, err := queries.New(b.Pool).ClusterEventCreate(context.Background(), queries.ClusterEventCreateParams{ClusterID: id, Level: level, Reason: reason, Message: message})
	require.NoError(t, err)
}

// MarkReady plays the reconcile worker finishing: the cluster is ready at
// <slug>.clusters.test.
func (b *Bundle) MarkReady(t *testing.T, cl queries.Cluster) {
	t.Helper()
	b.Event(t, cl.ID, "info", "Ready", "")
	_, markErr := queries.New(b.Pool).ClusterMarkReady(context.Background(), queries.ClusterMarkReadyParams{
		ID: cl.ID, Endpoint: cl.Slug + ".clusters.test", Generation: cl.Generation,
	})
	require.NoError(t, markErr)
}

// ReconcileJobs counts the reconcile jobs queued for a cluster.
func (b *Bundle) ReconcileJobs(t *testing.T, id int64) int {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM river_job WHERE kind = 'cluster_reconcile' AND (args->>'cluster_id')::bigint = $1", id).Scan(&n))
	return n
}

// vclusterKubeconfig is a kubeconfig as vcluster writes it, for use inside
// the host cluster.
func vclusterKubeconfig(t *testing.T) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["vcluster"] = &clientcmdapi.Cluster{Server: "https://localhost:8443", CertificateAuthorityData: []byte("test ca")}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("test cert"), ClientKeyData: []byte("test key")}
	cfg.Contexts["vcluster"] = &clientcmdapi.Context{Cluster: "vcluster", AuthInfo: "admin"}
	cfg.CurrentContext = "vcluster"
	out, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return out
}

// PutKubeconfigSecret writes vcluster's kubeconfig Secret for cl on the
// host cluster, in the cluster's own namespace.
func PutKubeconfigSecret(t *testing.T, cl queries.Cluster) {
	t.Helper()
	ctx := context.Background()
	kube := testenv.HostKube(t).Client(t)
	ns := clusters.Namespace(cl)
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	_, err = kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: clusters.KubeconfigSecretName(cl)},
		Data:       map[string][]byte{"config": vclusterKubeconfig(t)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// RequireKubeconfigFor checks a downloaded kubeconfig: vcluster's, with its
// server replaced by the cluster's endpoint.
func RequireKubeconfigFor(t *testing.T, cl queries.Cluster, raw []byte) {
	t.Helper()
	cfg, err := clientcmd.Load(raw)
	require.NoError(t, err)
	require.Len(t, cfg.Clusters, 1)
	require.Equal(t, "https://"+cl.Slug+".clusters.test", cfg.Clusters["vcluster"].Server)
	require.Equal(t, []byte("test ca"), cfg.Clusters["vcluster"].CertificateAuthorityData)
	require.Equal(t, []byte("test cert"), cfg.AuthInfos["admin"].ClientCertificateData)
}
