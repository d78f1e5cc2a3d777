package bench

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// BenchmarkSteadyStateHangingClusters runs the platform's workers, as
// 'kubebyon worker' runs them, over the full fleet (10,000 ready clusters,
// 100,000 nodes, 10,000 join tokens in use) whose control planes all hang:
// one local listener that accepts every connection and never answers. It
// runs for BENCH_STEADY_DURATION (default 10 minutes) and reports this
// process's CPU (cores, over the whole run and over its second half), its
// peak RSS, the River jobs waiting at the half and at the end, the
// clusters whose health was checked (or is backing off) and the log's
// size. The clusters' kubeconfigs are not read from a host cluster: the
// workers reach every cluster at the hanging listener.
func BenchmarkSteadyStateHangingClusters(b *testing.B) {
	duration := 10 * time.Minute
	if s := os.Getenv("BENCH_STEADY_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(b, err)
		duration = d
	}
	ctx := context.Background()
	pool := testenv.DB(b)
	box, err := secrets.New(bytes.Repeat([]byte{5}, 32))
	require.NoError(b, err)
	catalog, err := locale.New()
	require.NoError(b, err)
	seedFleet(b, pool, FullFleet)

	addr := hangingListener(b)
	virtual := func(context.Context, queries.Cluster) (*rest.Config, error) {
		return &rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, nil
	}
	var logBytes atomic.Int64
	logger := slog.New(slog.NewJSONHandler(countingWriter{&logBytes}, nil))
	rc, err := jobs.NewClient(jobs.Deps{
		Pool: pool, Logger: logger, Metrics: prometheus.NewRegistry(), Box: box, Catalog: catalog,
		VirtualConfig: virtual, JoinTokens: &jointokens.Service{Pool: pool, Box: box, Virtual: virtual},
	}, jobs.DefaultOptions(true))
	require.NoError(b, err)

	for i := 0; i < b.N; i++ {
		b.ResetTimer()
		rssBefore := rssMiB(b)
		sampling, stopSampling := context.WithCancel(ctx)
		maxRSS := make(chan float64, 1)
		go func() {
			var peak float64
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-sampling.Done():
					maxRSS <- peak
					return
				case <-tick.C:
					peak = max(peak, rssMiB(b))
				}
			}
		}()
		cpu0, start := cpuTime(b), time.Now()
		require.NoError(b, rc.Start(ctx))
		time.Sleep(duration / 2)
		cpuHalf, half := cpuTime(b), time.Now()
		waitingHalf := waitingJobs(b, ctx, pool)
		time.Sleep(duration - duration/2)
		cpuEnd, end := cpuTime(b), time.Now()
		waitingEnd := waitingJobs(b, ctx, pool)
		b.StopTimer()
		stopSampling()
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_ = rc.StopAndCancel(stopCtx)
		cancel()

		var checked, pacedAll, total int
		require.NoError(b, pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE checked_at IS NOT NULL),
			count(*) FILTER (WHERE checked_at IS NOT NULL OR failures > 0 OR due_at > now()),
			count(*)
			FROM cluster_checks WHERE kind = 'node_health'`).Scan(&checked, &pacedAll, &total))
		var completedKept int
		require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&completedKept))

		b.ReportMetric((cpuEnd-cpu0).Seconds()/end.Sub(start).Seconds(), "cores")
		b.ReportMetric((cpuEnd-cpuHalf).Seconds()/end.Sub(half).Seconds(), "cores-2nd-half")
		b.ReportMetric(rssBefore, "RSS-before-MiB")
		b.ReportMetric(<-maxRSS, "max-RSS-running-MiB")
		b.ReportMetric(float64(waitingHalf), "jobs-waiting-half")
		b.ReportMetric(float64(waitingEnd), "jobs-waiting-end")
		b.ReportMetric(float64(completedKept), "jobs-completed-kept")
		b.ReportMetric(float64(checked), "health-checked")
		b.ReportMetric(float64(total-pacedAll), "health-never-checked")
		b.ReportMetric(float64(logBytes.Load())/1024, "log-KiB")
	}
}

// rssMiB is this process's resident set size now.
func rssMiB(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	require.NoError(b, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, err := strconv.ParseFloat(strings.Fields(line)[1], 64)
			require.NoError(b, err)
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// waitingJobs counts the River jobs not finalized.
func waitingJobs(b *testing.B, ctx context.Context, pool *pgxpool.Pool) int {
	b.Helper()
	var n int
	require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE finalized_at IS NULL`).Scan(&n))
	return n
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// hangingListener accepts connections and never answers, as a control
// plane whose apiserver hangs.
func hangingListener(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	var wg sync.WaitGroup
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(io.Discard, conn)
				_ = conn.Close()
			}()
		}
	}()
	tb.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().String()
}

// countingWriter counts what the log would have written.
type countingWriter struct{ n *atomic.Int64 }

func (w countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}
