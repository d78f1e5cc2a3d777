package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// BenchmarkSteadyStateHangingClusters runs the platform's workers, as
// 'kubebyon worker' runs them, in a process of their own (this test
// binary started again, steadyWorker), over the full fleet (10,000 ready
// clusters, 100,000 nodes, 10,000 join tokens in use) whose control
// planes all hang: one local listener, in this process, that accepts
// every connection and never answers. It runs for BENCH_STEADY_DURATION
// (default 10 minutes) and reports the worker process's CPU (cores, over
// the whole run and over its second half) and its RSS (when its workers
// had started, and its peak: the kernel's high-water mark), the River
// jobs waiting at the half and at the end, the clusters whose health was
// checked (or is backing off), those whose control plane the metrics
// scrape tried, and the log's size. The clusters' kubeconfigs are not
// read from a host cluster: the workers reach every cluster at the
// hanging listener. The harness (the database seeding, the listener's
// thousands of connections) stays out of the figures.
func BenchmarkSteadyStateHangingClusters(b *testing.B) {
	duration := 10 * time.Minute
	if s := os.Getenv("BENCH_STEADY_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(b, err)
		duration = d
	}
	ctx := context.Background()
	pool := testenv.DB(b)
	seedFleet(b, pool, FullFleet)
	addr := testenv.HangingListener(b)

	for i := 0; i < b.N; i++ {
		b.ResetTimer()
		var logBytes atomic.Int64
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), steadyWorkerDB+"="+pool.Config().ConnString(), steadyWorkerHang+"="+addr)
		cmd.Stdout, cmd.Stderr = countingWriter{&logBytes}, os.Stderr
		// The worker dies with the benchmark.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		require.NoError(b, cmd.Start())
		pid := cmd.Process.Pid
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		start := time.Now()
		cpu0 := procCPU(b, pid)
		// Its RSS once it has started its workers (the worker's own
		// start-up, like 'kubebyon worker''s).
		time.Sleep(5 * time.Second)
		rssStarted := procMemMiB(b, pid, "VmRSS")
		time.Sleep(duration/2 - 5*time.Second)
		cpuHalf, half := procCPU(b, pid), time.Now()
		waitingHalf := waitingJobs(b, ctx, pool)
		time.Sleep(duration - duration/2)
		cpuEnd, end := procCPU(b, pid), time.Now()
		peak := procMemMiB(b, pid, "VmHWM")
		waitingEnd := waitingJobs(b, ctx, pool)
		b.StopTimer()
		require.NoError(b, cmd.Process.Signal(os.Interrupt))
		select {
		case err := <-exited:
			require.NoError(b, err, "the worker process stops cleanly")
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			b.Fatal("the worker process did not stop within a minute")
		}

		// A check was made, or is backing off (paced), per kind.
		paced := func(kind string) (checked, never int) {
			var pacedAll, total int
			require.NoError(b, pool.QueryRow(ctx, `SELECT
				count(*) FILTER (WHERE checked_at IS NOT NULL),
				count(*) FILTER (WHERE checked_at IS NOT NULL OR failures > 0 OR due_at > now()),
				count(*)
				FROM cluster_checks WHERE kind = $1`, kind).Scan(&checked, &pacedAll, &total))
			return checked, total - pacedAll
		}
		checked, neverChecked := paced("node_health")
		scraped, neverScraped := paced("metrics_scrape")
		var completedKept int
		require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&completedKept))

		b.ReportMetric((cpuEnd-cpu0).Seconds()/end.Sub(start).Seconds(), "cores")
		b.ReportMetric((cpuEnd-cpuHalf).Seconds()/end.Sub(half).Seconds(), "cores-2nd-half")
		b.ReportMetric(rssStarted, "RSS-started-MiB")
		b.ReportMetric(peak, "max-RSS-MiB")
		b.ReportMetric(float64(waitingHalf), "jobs-waiting-half")
		b.ReportMetric(float64(waitingEnd), "jobs-waiting-end")
		b.ReportMetric(float64(completedKept), "jobs-completed-kept")
		b.ReportMetric(float64(checked), "health-checked")
		b.ReportMetric(float64(neverChecked), "health-never-checked")
		b.ReportMetric(float64(scraped), "scrape-tried")
		b.ReportMetric(float64(neverScraped), "scrape-never-tried")
		b.ReportMetric(float64(logBytes.Load())/1024, "log-KiB")
	}
}

// The environment that makes this test binary the steady-state
// benchmark's worker process (TestMain): the database, and the hanging
// listener every cluster is reached at.
const (
	steadyWorkerDB   = "BENCH_STEADY_WORKER_DB"
	steadyWorkerHang = "BENCH_STEADY_WORKER_HANG"
)

// steadyWorker runs the platform's workers as 'kubebyon worker' does, on
// the database and with every cluster at the listener the environment
// names, logging JSON to stdout, until interrupted. It is the process
// BenchmarkSteadyStateHangingClusters measures.
func steadyWorker() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "steady worker:", err)
		return 1
	}
	pool, err := pgxpool.New(ctx, os.Getenv(steadyWorkerDB))
	if err != nil {
		return fail(err)
	}
	defer pool.Close()
	box, err := secrets.New(bytes.Repeat([]byte{5}, 32))
	if err != nil {
		return fail(err)
	}
	catalog, err := locale.New()
	if err != nil {
		return fail(err)
	}
	addr := os.Getenv(steadyWorkerHang)
	virtual := func(context.Context, queries.Cluster) (*rest.Config, error) {
		return &rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, nil
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	_, deps := workerDeps(pool, box, catalog, logger, "", virtual)
	rc, err := jobs.NewClient(deps, jobs.DefaultOptions(true))
	if err != nil {
		return fail(err)
	}
	if err := rc.Start(ctx); err != nil {
		return fail(err)
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = rc.StopAndCancel(stopCtx)
	return 0
}

// procCPU is the user and system CPU time process pid has used.
func procCPU(b *testing.B, pid int) time.Duration {
	cpu, _, ok := statCPU(fmt.Sprintf("/proc/%d/stat", pid))
	require.True(b, ok, "process %d's CPU time", pid)
	return cpu
}

// procMemMiB is a size from process pid's /proc status (VmRSS, VmHWM).
func procMemMiB(b *testing.B, pid int, field string) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(b, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, field+":") {
			kb, err := strconv.ParseFloat(strings.Fields(line)[1], 64)
			require.NoError(b, err)
			return kb / 1024
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
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

// countingWriter counts what the log would have written.
type countingWriter struct{ n *atomic.Int64 }

func (w countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}
