package handlerstest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// MetricsCluster makes a ready cluster of the user with this email,
// straight in the database: the metrics pages need no control plane.
func (b *Bundle) MetricsCluster(t *testing.T, email, name string) queries.Cluster {
	t.Helper()
	ctx := context.Background()
	q := queries.New(b.Pool)
	u, err := q.UserGetByEmail(ctx, email)
	require.NoError(t, err)
	cl, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{
		OwnerID: u.ID, Name: name, Slug: name + "-" + strings.ToLower(fmt.Sprint(u.ID)), KubernetesVersion: "v1.34.0", PublicAccessMode: "nodeport",
	})
	require.NoError(t, err)
	_, err = q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: cl.ID, Endpoint: cl.Slug + ".clusters.test", Generation: cl.Generation})
	require.NoError(t, err)
	return b.Cluster(t, cl.ID)
}

// MetricsStore is where a test keeps the control planes' metrics: the
// pages must work the same on either.
type MetricsStore struct {
	Name string
	vm   bool
}

// MetricsStores are the two stores the metrics tests run on.
var MetricsStores = []MetricsStore{{Name: "postgres"}, {Name: "victoriametrics", vm: true}}

// SetupMetrics is Setup with the metrics kept in store: PostgreSQL, or a
// VictoriaMetrics of the test's own (written with remote write, read
// with PromQL).
func SetupMetrics(t *testing.T, store MetricsStore) *Bundle {
	t.Helper()
	if !store.vm {
		return Setup(t)
	}
	vm := testenv.VictoriaMetrics(t)
	b := Setup(t, func(d *handlers.Deps) {
		d.ClusterMetrics = &metrics.Service{Pool: d.ClusterMetrics.Pool, Backend: metrics.Prom{WriteURL: vm + "/api/v1/write", QueryURL: vm}}
	})
	b.MetricsVM = vm
	return b
}

// RecordMetrics stores samples of a cluster where the handlers read them,
// searchable at once.
func (b *Bundle) RecordMetrics(t *testing.T, clusterID int64, samples ...metrics.Sample) {
	t.Helper()
	for _, smp := range samples {
		require.NoError(t, b.Metrics.Record(context.Background(), clusterID, smp))
	}
	if b.MetricsVM != "" {
		testenv.FlushVictoriaMetrics(t, b.MetricsVM)
	}
}

// SeededPoints is how many samples SeedMetrics records: an hour of
// scrapes a minute apart.
const SeededPoints = 60

// UnreachablePoint is the sample SeedMetrics records as a scrape that
// did not reach the control plane.
const UnreachablePoint = 30

// SeedMetrics records an hour of samples of the cluster a minute apart,
// the last now, and returns their times: sample i reads i/s, writes i/2
// per second, has a p99 of 200 ms and 100+i objects, 2 of 3 nodes
// Ready; one did not reach the control plane. (The hour range reaches
// back an hour from when it is asked: the oldest sample stays in it for
// a minute.)
func (b *Bundle) SeedMetrics(t *testing.T, clusterID int64) []time.Time {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	times := make([]time.Time, SeededPoints)
	samples := make([]metrics.Sample, SeededPoints)
	for i := range SeededPoints {
		at := now.Add(time.Duration(i-SeededPoints+1) * time.Minute)
		times[i] = at
		smp := metrics.Sample{At: at}
		if i != UnreachablePoint {
			read, write := float64(i), float64(i)/2
			smp = metrics.Sample{
				At: at, Up: true, ReadRate: &read, WriteRate: &write, WatchRate: ptrTo(0.5), ErrorRate: ptrTo(0.25),
				LatencyP50: ptrTo(0.01), LatencyP99: ptrTo(0.2), Inflight: ptrTo(1.0),
				Objects: ptrTo(int64(100 + i)), Watches: ptrTo(int64(4)),
				NodesReady: ptrTo(int32(2)), NodesTotal: ptrTo(int32(3)), PodsRunning: ptrTo(int32(5)), PodsTotal: ptrTo(int32(5)),
			}
		}
		samples[i] = smp
	}
	b.RecordMetrics(t, clusterID, samples...)
	return times
}

// RollUpMetrics runs the maintenance job's work as if ten minutes had
// passed since the seeded samples: they are rolled up into 5-minute rows
// (the 24 h range), and the hours that are complete into hourly ones (in
// PostgreSQL; a VictoriaMetrics sums the steps up when asked). It
// returns how many 5-minute windows the samples fall in.
func (b *Bundle) RollUpMetrics(t *testing.T, times []time.Time) int {
	t.Helper()
	svc := &metrics.Service{Pool: b.Pool}
	last := times[len(times)-1]
	// The periodic maintenance job of this test's River client may have
	// rolled up while the samples were being recorded one by one, and
	// marked windows done that it saw half of: start the rollups over
	// from the complete samples. (A run from now on reads them whole and
	// writes the same rows.)
	_, err := b.Pool.Exec(context.Background(), "DELETE FROM cluster_metric_rollups; DELETE FROM cluster_metrics_5m; DELETE FROM cluster_metrics_1h")
	require.NoError(t, err)
	require.NoError(t, svc.Maintain(context.Background(), last.Add(10*time.Minute), metrics.DefaultSettings(), slog.New(slog.NewTextHandler(io.Discard, nil))))
	windows := map[time.Time]bool{}
	for _, at := range times {
		windows[at.Truncate(5*time.Minute)] = true
	}
	return len(windows)
}

func ptrTo[T any](v T) *T { return &v }
