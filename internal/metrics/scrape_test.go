package metrics_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// scrape reads the apiserver's counters, and when.
func scrape(t *testing.T, cfg *rest.Config) (metrics.Counters, time.Time) {
	t.Helper()
	c, err := metrics.Scrape(context.Background(), cfg, nil)
	require.NoError(t, err)
	return c, time.Now()
}

// scrapeUntil scrapes until ok holds of the counters: the apiserver
// counts stored objects periodically, and a watch when it has ended.
func scrapeUntil(t *testing.T, cfg *rest.Config, what string, ok func(metrics.Counters) bool) (metrics.Counters, time.Time) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, at := scrape(t, cfg)
		if ok(c) {
			return c, at
		}
		if time.Now().After(deadline) {
			t.Fatalf("scrape: %s: not within 30s: %+v", what, c)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// countConfigMaps is the configmaps stored in every namespace.
func countConfigMaps(t *testing.T, kc kubernetes.Interface) int64 {
	t.Helper()
	l, err := kc.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return int64(len(l.Items))
}

func createNamespace(t *testing.T, kc kubernetes.Interface, name string) {
	t.Helper()
	_, err := kc.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// TestScrapeCountsTraffic drives known traffic at a real apiserver and
// checks that two scrapes show at least that much: reads, writes, a watch,
// 5xx answers, latency, and the configmaps created in the object counts.
func TestScrapeCountsTraffic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := testenv.NewKube(t)
	// The apiserver counts stored objects every minute plus up to 1.2
	// minutes of jitter: every second, for the test to see its configmaps.
	// It counts a resource's objects in its watch cache, once the cache
	// has caught up with etcd's revision; on the test etcd (3.4.23, no
	// progress notifications, other apiservers writing) it never knows it
	// has, and reports -1: without the cache, it counts in etcd.
	k.Restart(t, "--etcd-count-metric-poll-period=1s", "--watch-cache=false")
	kc := k.Client(t)
	createNamespace(t, kc, "traffic")
	base := countConfigMaps(t, kc)
	before, beforeAt := scrapeUntil(t, k.Config, "configmaps counted", func(c metrics.Counters) bool {
		return c.Objects["configmaps"] == base
	})

	const n = 20
	w, err := kc.CoreV1().ConfigMaps("traffic").Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	require.NoError(t, err)
	for i := range n {
		_, err := kc.CoreV1().ConfigMaps("traffic").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for i := range n {
		_, err := kc.CoreV1().ConfigMaps("traffic").Get(ctx, fmt.Sprint("cm-", i), metav1.GetOptions{})
		require.NoError(t, err)
	}
	list, err := kc.CoreV1().ConfigMaps("traffic").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, n)
	open, _ := scrape(t, k.Config)
	require.Greater(t, open.OpenWatches, before.OpenWatches, "the test's watch is open")
	w.Stop()

	// Proxying to a port the Service does not have answers 503.
	_, err = kc.CoreV1().Services("traffic").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "nowhere"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	const failed = 3
	for range failed {
		_, err := kc.CoreV1().Services("traffic").ProxyGet("http", "nowhere", "81", "/", nil).DoRaw(ctx)
		require.Error(t, err)
	}

	after, afterAt := scrapeUntil(t, k.Config, "configmaps and the watch counted", func(c metrics.Counters) bool {
		return c.Objects["configmaps"] == base+n && c.WatchRequests > before.WatchRequests
	})
	s := metrics.Derive(&before, beforeAt, after, afterAt)
	elapsed := afterAt.Sub(beforeAt).Seconds()
	require.True(t, s.Up)
	// A rate times the time it was taken over gives the count back up to
	// rounding (20.999999999999996 for 21): compare with a tolerance.
	require.GreaterOrEqual(t, *s.ReadRate*elapsed, float64(n+1)-1e-9, "gets and the list")
	require.GreaterOrEqual(t, *s.WriteRate*elapsed, float64(n+1)-1e-9, "creates")
	require.GreaterOrEqual(t, *s.WatchRate*elapsed, 1.0-1e-9, "the watch, ended")
	require.GreaterOrEqual(t, *s.ErrorRate*elapsed, float64(failed)-1e-9, "proxied to no endpoint")
	require.NotNil(t, s.LatencyP99)
	require.Positive(t, *s.LatencyP99)
	require.LessOrEqual(t, *s.LatencyP50, *s.LatencyP99)
	require.Equal(t, base+n, s.ByResource["configmaps"])
	require.Equal(t, before.Objects["configmaps"]+n, s.ByResource["configmaps"])
	require.GreaterOrEqual(t, *s.Objects, s.ByResource["configmaps"]+1, "the namespace too")
	require.NotNil(t, s.Inflight)
	require.Positive(t, *s.Inflight, "the scrape itself")
	require.Equal(t, after.Start, before.Start)
}

// TestScrapeAfterRestart restarts an apiserver between two scrapes: its
// counters start from zero again, below the first scrape's, and the rates
// are those counted since the restart, never negative.
func TestScrapeAfterRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := testenv.NewKube(t)
	kc := k.Client(t)
	for range 100 {
		_, err := kc.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		require.NoError(t, err)
	}
	before, beforeAt := scrape(t, k.Config)

	k.Restart(t)
	const reads, writes = 10, 5
	for range reads {
		_, err := kc.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		require.NoError(t, err)
	}
	for i := range writes {
		createNamespace(t, kc, fmt.Sprint("after-restart-", i))
	}
	after, afterAt := scrape(t, k.Config)
	require.NotEqual(t, before.Start, after.Start, "a new process")
	require.Less(t, after.Reads, before.Reads, "the counters went down")

	s := metrics.Derive(&before, beforeAt, after, afterAt)
	elapsed := afterAt.Sub(beforeAt).Seconds()
	for name, rate := range map[string]*float64{"read": s.ReadRate, "write": s.WriteRate, "watch": s.WatchRate, "error": s.ErrorRate} {
		require.NotNil(t, rate, name)
		require.GreaterOrEqual(t, *rate, 0.0, name)
	}
	require.InDelta(t, after.Reads/elapsed, *s.ReadRate, 1e-9, "the reads since the restart")
	require.InDelta(t, after.Writes/elapsed, *s.WriteRate, 1e-9, "the writes since the restart")
	require.GreaterOrEqual(t, *s.ReadRate*elapsed, float64(reads))
	require.GreaterOrEqual(t, *s.WriteRate*elapsed, float64(writes))
	require.NotNil(t, s.LatencyP99)
	require.Positive(t, *s.LatencyP99)
}

// TestCountNodesPods counts Nodes (some Ready) and Pods (some Running)
// made through the API.
func TestCountNodesPods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kc := testenv.NewKube(t).Client(t)
	for i, ready := range []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionTrue, corev1.ConditionFalse, ""} {
		n, err := kc.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("node-", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
		if ready == "" {
			continue // no Ready condition yet: not ready
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
		_, err = kc.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	for _, ns := range []string{"one", "two"} {
		createNamespace(t, kc, ns)
		_, err := kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for i, phase := range []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodPending, corev1.PodSucceeded} {
		ns := []string{"one", "two"}[i%2]
		p, err := kc.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("pod-", i)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		p.Status.Phase = phase
		_, err = kc.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		require.NoError(t, err)
	}

	// The watch cache answers: it may lag the writes by a moment.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		nodesReady, nodesTotal, podsRunning, podsTotal, err := metrics.CountNodesPods(ctx, kc)
		if !assert.NoError(c, err) {
			return
		}
		assert.Equal(c, [4]int32{2, 4, 3, 5}, [4]int32{nodesReady, nodesTotal, podsRunning, podsTotal})
	}, 10*time.Second, 100*time.Millisecond)
}

// TestScrapeUnreachable fails quickly against a server that accepts
// connections and never answers, and one that refuses them.
func TestScrapeUnreachable(t *testing.T) {
	t.Parallel()
	silent := silentListener(t)
	closed := silentListener(t)
	require.NoError(t, closed.Close())
	for _, tc := range []struct {
		name    string
		addr    string
		timeout time.Duration // cfg.Timeout; else a context deadline
	}{
		{"silent, config timeout", silent.Addr().String(), 500 * time.Millisecond},
		{"silent, context deadline", silent.Addr().String(), 0},
		{"refused", closed.Addr().String(), 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := &rest.Config{Host: "https://" + tc.addr, Timeout: tc.timeout, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
			ctx := context.Background()
			if tc.timeout == 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 500*time.Millisecond)
				defer cancel()
			}
			start := time.Now()
			_, err := metrics.Scrape(ctx, cfg, nil)
			require.Error(t, err)
			require.Less(t, time.Since(start), 3*time.Second)
		})
	}
}

// silentListener accepts connections and never answers them.
func silentListener(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	return l
}
