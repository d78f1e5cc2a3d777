package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestClusterEndToEnd drives a cluster from the console through River's
// real reconcile worker, Helm and the real chart on the host apiserver:
// created in the form, provisioned, ready once the test plays the control
// plane, its kubeconfig downloaded from the console used with client-go
// against the second apiserver, then deleted.
func TestClusterEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := handlerstest.Setup(t, func(d *handlers.Deps) {
		rc, err := jobs.NewClient(jobs.Deps{
			Pool: d.Pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: prometheus.NewRegistry(),
			Box: d.Box, Catalog: d.Catalog, KubeconfigPath: d.Clusters.KubeconfigPath, JoinTokens: d.JoinTokens,
		}, jobs.Options{
			Work: true, MaxWorkers: 2, CleanupInterval: time.Hour, WorkQueues: []string{clusters.Queue},
			ClusterPollInterval: 100 * time.Millisecond, ClusterReadyTimeout: time.Minute,
		})
		require.NoError(t, err)
		require.NoError(t, rc.Start(ctx))
		t.Cleanup(func() { _ = rc.Stop(context.Background()) })
		d.Clusters = &clusters.Service{Pool: d.Pool, River: rc, Box: d.Box, KubeconfigPath: d.Clusters.KubeconfigPath}
	})
	b.ConnectHost(t)
	rt, err := settings.Load(ctx, queries.New(b.Pool), b.Box)
	require.NoError(t, err)
	rt.ChartPath = testenv.VClusterChart(t)
	require.NoError(t, settings.Save(ctx, queries.New(b.Pool), b.Box, rt))
	host := testenv.HostKube(t).Client(t)

	c, _ := b.SignedUpUser(t, "e2e")
	cl := b.NewCluster(t, c, "e2e")
	handlerstest.WaitFor(t, func() bool {
		_, err := host.AppsV1().StatefulSets(vcluster.Namespace(cl)).Get(ctx, "e2e", metav1.GetOptions{})
		return err == nil
	}, "the worker installs the chart")
	require.Equal(t, "provisioning", b.Cluster(t, cl.ID).Status)

	// Play the control plane: the StatefulSet is ready and vcluster wrote
	// its kubeconfig, for a second apiserver.
	virt := testenv.NewKube(t)
	sts, err := host.AppsV1().StatefulSets(vcluster.Namespace(cl)).Get(ctx, "e2e", metav1.GetOptions{})
	require.NoError(t, err)
	sts.Status.Replicas, sts.Status.ReadyReplicas = 1, 1
	_, err = host.AppsV1().StatefulSets(vcluster.Namespace(cl)).UpdateStatus(ctx, sts, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = host.CoreV1().Secrets(vcluster.Namespace(cl)).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: vcluster.KubeconfigSecretName(cl), Namespace: vcluster.Namespace(cl)},
		Data:       map[string][]byte{"config": virt.Kubeconfig(t)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	handlerstest.WaitFor(t, func() bool { return b.Cluster(t, cl.ID).Status == "ready" }, "the cluster becomes ready")
	cl = b.Cluster(t, cl.ID)

	// The console's kubeconfig names the stable endpoint; reach it as DNS
	// and the public entry would, by dialling the second apiserver.
	code, body := c.Get(fmt.Sprintf("/clusters/%d/kubeconfig", cl.ID))
	require.Equal(t, http.StatusOK, code)
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(body))
	require.NoError(t, err)
	require.Equal(t, "https://"+cl.Endpoint, cfg.Host)
	virtURL, err := url.Parse(virt.URL)
	require.NoError(t, err)
	cfg.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, virtURL.Host)
	}
	cfg.TLSClientConfig.ServerName = "localhost"
	vc, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	nss, err := vc.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, nss.Items)

	// Delete from the console; the test plays the namespace controller.
	resp := c.Post(fmt.Sprintf("/clusters/%d/delete", cl.ID), fmt.Sprintf("/clusters/%d/delete", cl.ID), url.Values{"confirm": {"e2e"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	handlerstest.WaitFor(t, func() bool {
		ns, err := host.CoreV1().Namespaces().Get(ctx, vcluster.Namespace(cl), metav1.GetOptions{})
		return err == nil && ns.DeletionTimestamp != nil
	}, "the worker asks for the namespace to go")
	ns, err := host.CoreV1().Namespaces().Get(ctx, vcluster.Namespace(cl), metav1.GetOptions{})
	require.NoError(t, err)
	ns.Spec.Finalizers = nil
	_, err = host.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	require.NoError(t, err)
	handlerstest.WaitFor(t, func() bool { return b.Cluster(t, cl.ID).Status == "deleted" }, "the cluster is deleted")
}
