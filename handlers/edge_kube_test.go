package handlers_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestKubeconfigThroughEdge is the public entry as a user meets it: the
// kubeconfig downloaded from the console, used by client-go with full
// certificate verification, reaches the cluster's control plane through
// HAProxy (a dialer stands in for DNS: every name resolves to the edge);
// a second cluster's name reaches its own control plane, never the
// first's; and a watch opened through HAProxy keeps delivering events
// across the reload that the second cluster's route caused, on the
// connection it was opened on.
func TestKubeconfigThroughEdge(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	q := queries.New(b.Pool)
	c, _ := b.SignedUpUser(t, "kubectl-user")
	first, firstVirt := b.ReadyVirtualCluster(t, c, "first")
	// The "NodePort" of a cluster is its control plane's port on
	// 127.0.0.1, the Ready host node's address.
	nodePortOf := func(virt *testenv.Kube) int {
		u, err := url.Parse(virt.URL)
		require.NoError(t, err)
		port, err := strconv.Atoi(u.Port())
		require.NoError(t, err)
		return port
	}
	setPorts := func(id int64, api int) {
		_, err := b.Pool.Exec(ctx, "UPDATE clusters SET node_port = $2 WHERE id = $1", id, api)
		require.NoError(t, err)
	}
	setPorts(first.ID, nodePortOf(firstVirt))
	require.NoError(t, q.HostNodeUpsert(ctx, queries.HostNodeUpsertParams{Name: "host-1", InternalIp: "127.0.0.1", Ready: true}))
	tok := b.EdgeToken(t, "kubectl")
	agent := b.RunEdge(t, "edge-kube", tok.Value)

	// The user's kubeconfig, from the console, its server the cluster's
	// public name; every connection goes to the edge.
	// dials counts the connections each client opened to the edge.
	throughEdge := func(cl queries.Cluster, dials *atomic.Int32) kubernetes.Interface {
		t.Helper()
		resp, err := c.HTTP.Get(b.Server.URL + "/clusters/" + strconv.FormatInt(cl.ID, 10) + "/kubeconfig")
		require.NoError(t, err)
		kubeconfig := handlerstest.ReadBody(t, resp)
		require.Equal(t, http.StatusOK, resp.StatusCode, kubeconfig)
		cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kubeconfig))
		require.NoError(t, err)
		require.Equal(t, "https://"+cl.Slug+".clusters.test", cfg.Host)
		require.False(t, cfg.Insecure)
		cfg.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, agent.APIBind)
		}
		kc, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		return kc
	}
	var firstDials atomic.Int32
	firstClient := throughEdge(first, &firstDials)
	require.Eventually(t, func() bool {
		_, err := firstClient.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "kubectl reaches the first cluster through the edge")

	_, err := firstVirt.Client(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-in-first"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	list, err := firstClient.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	// The apiserver may end a watch itself (its watch cache restarts when
	// its etcd watch fails, which a loaded machine makes happen): the
	// watch is resumed from where it was, as informers do, and what the
	// edge must keep is the connection, counted by its dials.
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return firstClient.CoreV1().Namespaces().Watch(ctx, o)
		},
	})
	require.NoError(t, err)
	defer w.Stop()
	dialsBefore := firstDials.Load()

	// A second cluster: HAProxy reloads for its route.
	second, secondVirt := b.ReadyVirtualCluster(t, c, "second")
	setPorts(second.ID, nodePortOf(secondVirt))
	secondClient := throughEdge(second, new(atomic.Int32))
	require.Eventually(t, func() bool {
		_, err := secondClient.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "kubectl reaches the second cluster through the edge")
	_, err = secondClient.CoreV1().Namespaces().Get(ctx, "only-in-first", metav1.GetOptions{})
	require.Error(t, err, "the second cluster's name reaches its own control plane")

	// The watch opened before the reload still delivers.
	_, err = firstVirt.Client(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "after-reload"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "the watch ended")
			if ns, isNS := ev.Object.(*corev1.Namespace); isNS && ev.Type == watch.Added && ns.Name == "after-reload" {
				require.Equal(t, dialsBefore, firstDials.Load(), "the edge kept the connection the watch was opened on across the reload")
				return
			}
		case <-deadline:
			t.Fatal("the watch opened before the reload saw nothing after it")
		}
	}
}
