package jobs_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestMetricsScrapeWorker scrapes a real virtual apiserver twice, with
// traffic between: the first scrape keeps the counters and records the
// gauges (no rates without a previous scrape), the second the rates of
// what the test did and the nodes it made. A cluster that does not answer
// records a gap and backs off, and is not retried by River.
func TestMetricsScrapeWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	virt := testenv.NewKube(t)
	kc := virt.Client(t)
	cl := b.readyCluster(t, "scraped")
	gone := b.readyCluster(t, "scrape-gone")
	svc := &metrics.Service{Pool: b.pool}
	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.MetricsScrapeWorker{
		Metrics: svc, Logger: b.logger,
		VirtualConfig: func(_ context.Context, c queries.Cluster) (*rest.Config, error) {
			if c.ID == gone.ID {
				return &rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, nil
			}
			return virt.Config, nil
		},
	})
	for _, c := range []queries.Cluster{cl, gone} {
		b.schedule(t, c.ID, checks.MetricsScrape, time.Now())
	}
	run := func() {
		t.Helper()
		for _, c := range []queries.Cluster{cl, gone} {
			tx, err := b.pool.Begin(ctx)
			require.NoError(t, err)
			res, err := w.Work(ctx, t, tx, metrics.ScrapeArgs{ClusterID: c.ID}, nil)
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobCompleted, res.EventKind, "an unreachable cluster is recorded, not retried by River")
			require.NoError(t, tx.Commit(ctx))
		}
	}

	run()
	s, err := svc.OwnSeries(ctx, actingAs(t, svc.Pool, cl.OwnerID), cl.ID, metrics.Range1h, time.Now())
	require.NoError(t, err)
	require.Len(t, s.Time, 1)
	require.Nil(t, s.ReadRate[0], "no rate from a first scrape")
	require.NotNil(t, s.Objects[0], "a count, even before the apiserver's first count of its storage")
	require.Equal(t, int32(0), *s.NodesTotal[0])
	checked := b.check(t, cl.ID, checks.MetricsScrape)
	require.False(t, checked.UnreachableSince.Valid)
	require.WithinDuration(t, time.Now().Add(time.Minute), checked.DueAt.Time, 5*time.Second, "scraped again in an interval")

	g, err := svc.OwnSeries(ctx, actingAs(t, svc.Pool, gone.OwnerID), gone.ID, metrics.Range1h, time.Now())
	require.NoError(t, err)
	require.Len(t, g.Time, 1, "the unreachable cluster records a gap")
	require.Nil(t, g.Objects[0])
	require.Nil(t, g.NodesTotal[0], "a gap, not zeros")
	require.True(t, b.check(t, gone.ID, checks.MetricsScrape).UnreachableSince.Valid)

	// Traffic: writes, reads and two nodes, one Ready.
	ns := "metrics-scrape"
	_, err = kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i := range 20 {
		_, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = kc.CoreV1().ConfigMaps(ns).Get(ctx, fmt.Sprintf("cm-%d", i), metav1.GetOptions{})
		require.NoError(t, err)
	}
	healthNode(t, kc, "scraped-1", corev1.ConditionTrue, time.Now())
	healthNode(t, kc, "scraped-2", corev1.ConditionFalse, time.Now())
	time.Sleep(time.Second)
	run()
	s, err = svc.OwnSeries(ctx, actingAs(t, svc.Pool, cl.OwnerID), cl.ID, metrics.Range1h, time.Now())
	require.NoError(t, err)
	require.Len(t, s.Time, 2)
	elapsed := float64(s.Time[1] - s.Time[0])
	if elapsed < 1 {
		elapsed = 1
	}
	require.NotNil(t, s.WriteRate[1])
	require.NotNil(t, s.ReadRate[1])
	// At least what the test sent, over at most the seconds between the
	// scrapes (rounded up to the next second).
	require.GreaterOrEqual(t, *s.WriteRate[1]*(elapsed+1), 21.0, "20 ConfigMaps, a namespace and two nodes written")
	require.GreaterOrEqual(t, *s.ReadRate[1]*(elapsed+1), 20.0, "20 reads")
	require.NotNil(t, s.LatencyP99[1])
	require.Positive(t, *s.LatencyP99[1])
	require.Equal(t, int32(2), *s.NodesTotal[1])
	require.Equal(t, int32(1), *s.NodesReady[1])
}

// TestMetricsScrapeAlerts: a control plane whose p99 latency stayed over
// the threshold for ten minutes (seeded history) raises one alert, told
// to its owner in-app and by email; the next scrape of the real, fast
// apiserver clears it, marks the alert's notification read and tells the
// owner; a scrape after that tells nothing more.
//
// It runs with the metrics in PostgreSQL and in a VictoriaMetrics, where
// a scrape's own sample is searchable only a moment later: the alerts
// take it from the scrape, not the database.
func TestMetricsScrapeAlerts(t *testing.T) {
	t.Parallel()
	for _, vm := range []bool{false, true} {
		name := "postgres"
		if vm {
			name = "victoriametrics"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testMetricsScrapeAlerts(t, vm)
		})
	}
}

func testMetricsScrapeAlerts(t *testing.T, vm bool) {
	b := setup(t)
	ctx := context.Background()
	virt := testenv.NewKube(t)
	cl := b.readyCluster(t, "alerted")
	svc := &metrics.Service{Pool: b.pool}
	// flush makes the seeded samples searchable at once (VictoriaMetrics'
	// own flush comes a second later).
	flush := func() {}
	if vm {
		vmURL := testenv.VictoriaMetrics(t)
		svc.Backend = metrics.Prom{WriteURL: vmURL + "/api/v1/write", QueryURL: vmURL}
		flush = func() { testenv.FlushVictoriaMetrics(t, vmURL) }
	}
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.MetricsScrapeWorker{
		Metrics: svc, Logger: b.logger, Box: box,
		VirtualConfig: func(context.Context, queries.Cluster) (*rest.Config, error) { return virt.Config, nil },
	})
	b.schedule(t, cl.ID, checks.MetricsScrape, time.Now())
	run := func() {
		t.Helper()
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		res, err := w.Work(ctx, t, tx, metrics.ScrapeArgs{ClusterID: cl.ID}, nil)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.NoError(t, tx.Commit(ctx))
	}
	type told struct {
		Message string
		Read    bool
	}
	notices := func() []told {
		t.Helper()
		rows, err := b.pool.Query(ctx, `SELECT message, read_at IS NOT NULL FROM notifications
			WHERE user_id = $1 AND kind = 'control_plane' ORDER BY id`, cl.OwnerID)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[told])
		require.NoError(t, err)
		return out
	}
	emails := func() int {
		t.Helper()
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'email'").Scan(&n))
		return n
	}

	// Ten minutes of 5-second p99s, a scrape a minute.
	now := time.Now()
	for i := 10; i >= 1; i-- {
		smp := metrics.Sample{At: now.Add(-time.Duration(i)*time.Minute + 30*time.Second), Up: true}
		slow, none := 5.0, 0.0
		smp.LatencyP99, smp.ErrorRate = &slow, &none
		require.NoError(t, svc.Record(ctx, cl.ID, smp))
	}
	flush()
	run()
	require.Equal(t, []told{{Message: "ControlPlaneSlow"}}, notices(), "told once")
	require.Equal(t, 1, emails(), "by email too (the default for alerts)")

	// The real apiserver answers in milliseconds: the alert clears.
	time.Sleep(time.Second)
	run()
	require.Equal(t, []told{{Message: "ControlPlaneSlow", Read: true}, {Message: "ControlPlaneSlowCleared"}}, notices())
	require.Equal(t, 2, emails())
	time.Sleep(time.Second)
	run()
	require.Len(t, notices(), 2, "nothing more to tell")
}
