// Package bench holds benchmarks that need the whole platform: run them
// with 'make bench' (go test -bench), not as part of 'make test'.
package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestMain runs the tests, or as the steady-state benchmark's worker
// process (steadyWorker) or the page benchmarks' server (benchServe)
// only that.
func TestMain(m *testing.M) {
	if os.Getenv(steadyWorkerDB) != "" {
		os.Exit(steadyWorker())
	}
	if os.Getenv(benchServeDB) != "" {
		os.Exit(benchServe())
	}
	testenv.Main(m)
}

// BenchmarkClusterCreateToInstalled creates 1,000 clusters (issue 10's
// figure; BENCH_INSTALLS sets another number) through the
// service the console's create handler calls, and lets River's workers
// install each with Helm into the real apiserver. It reports clusters per
// second, the median and p99 time from create to installed, and this
// process's peak RSS (the platform: handlers' service, River, Helm).
func BenchmarkClusterCreateToInstalled(b *testing.B) {
	n := 1000
	if s := os.Getenv("BENCH_INSTALLS"); s != "" {
		v, err := strconv.Atoi(s)
		require.NoError(b, err)
		n = v
	}
	ctx := context.Background()
	pool := testenv.DB(b)
	box, err := secrets.New(bytes.Repeat([]byte{5}, 32))
	require.NoError(b, err)
	host := testenv.HostKube(b)
	kubecfg := filepath.Join(b.TempDir(), "host.kubeconfig")
	require.NoError(b, os.WriteFile(kubecfg, host.Kubeconfig(b), 0o600))
	rt := settings.Defaults()
	rt.APIBaseDomain = "bench.test"
	rt.ChartPath = testenv.VClusterChart(b)
	require.NoError(b, settings.Save(ctx, queries.New(pool), box, rt))
	q := queries.New(pool)
	u, err := q.UserCreateUnverified(ctx, queries.UserCreateUnverifiedParams{Email: "bench@example.com", Name: "Bench"})
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `WITH p AS (INSERT INTO plans (name, max_clusters, max_nodes_per_cluster) VALUES ('bench', 100000, 10) RETURNING id)
		UPDATE subscriptions SET plan_id = (SELECT id FROM p) WHERE org_id = (SELECT id FROM organizations WHERE personal_of = $1)`, u.ID)
	require.NoError(b, err)

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts := jobs.DefaultOptions(true)
	catalog, err := locale.New()
	require.NoError(b, err)
	set, deps := workerDeps(pool, box, catalog, logger, kubecfg, nil)
	deps.Charts = &vcluster.Charts{}
	rc, err := jobs.NewClient(deps, opts)
	require.NoError(b, err)
	set.SetRiver(rc)
	svc := set.Clusters

	for i := 0; i < b.N; i++ {
		round := fmt.Sprintf("r%d", i)
		b.ResetTimer()
		require.NoError(b, rc.Start(ctx))
		start := time.Now()
		created := make(map[int64]time.Time, n)
		for j := 0; j < n; j++ {
			c, err := svc.Create(ctx, actingAs(b, svc.Pool, u.ID), clusters.Input{Name: fmt.Sprintf("%s-c%d", round, j)}, audit.Actor{UserID: u.ID})
			require.NoError(b, err)
			created[c.ID] = time.Now()
		}
		installed := waitInstalled(b, pool, created)
		elapsed := time.Since(start)
		b.StopTimer()
		require.NoError(b, rc.Stop(ctx))

		var lat []time.Duration
		for id, at := range installed {
			lat = append(lat, at.Sub(created[id]))
		}
		sort.Slice(lat, func(a, z int) bool { return lat[a] < lat[z] })
		b.ReportMetric(float64(n)/elapsed.Seconds(), "clusters/s")
		b.ReportMetric(lat[len(lat)/2].Seconds(), "p50-s")
		b.ReportMetric(lat[len(lat)*99/100].Seconds(), "p99-s")
		b.ReportMetric(peakRSSMiB(b), "peak-RSS-MiB")
	}
}

// waitInstalled waits until every cluster's worker has installed its
// release (the Installing event), and returns when each was recorded.
func waitInstalled(b *testing.B, pool *pgxpool.Pool, created map[int64]time.Time) map[int64]time.Time {
	b.Helper()
	ids := make([]int64, 0, len(created))
	for id := range created {
		ids = append(ids, id)
	}
	deadline := time.Now().Add(15 * time.Minute)
	for {
		rows, err := pool.Query(context.Background(),
			"SELECT cluster_id, min(created_at) FROM cluster_events WHERE reason = 'Installing' AND cluster_id = ANY($1) GROUP BY cluster_id", ids)
		require.NoError(b, err)
		installed := map[int64]time.Time{}
		for rows.Next() {
			var id int64
			var at time.Time
			require.NoError(b, rows.Scan(&id, &at))
			installed[id] = at
		}
		require.NoError(b, rows.Err())
		if len(installed) == len(created) {
			return installed
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d clusters installed", len(installed), len(created))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// peakRSSMiB reads this process's high-water resident set size.
func peakRSSMiB(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	require.NoError(b, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, err := strconv.ParseFloat(strings.Fields(line)[1], 64)
			require.NoError(b, err)
			return kb / 1024
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}
