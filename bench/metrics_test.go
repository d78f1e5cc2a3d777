package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// The helper processes of BenchmarkMetricsSteadyState are this test
// binary run again with only BenchmarkMetricsCaptureHelper or
// BenchmarkMetricsReplayServer, and one of these naming the file of captured
// bodies.
const (
	metricsCaptureEnv = "BENCH_METRICS_HELPER_CAPTURE"
	metricsReplayEnv  = "BENCH_METRICS_HELPER_REPLAY"
	// metricsReplayAt starts the line on which the replay server tells
	// the benchmark its address.
	metricsReplayAt = "metrics replay server at "
	// metricsNamespace holds the pods and the ConfigMaps of the captured
	// apiserver.
	metricsNamespace = "fleet"
)

// capturedBodies are a real apiserver's answers to what a scrape asks:
// its /metrics in both formats it offers (with the Content-Type it sent
// each with), and its nodes and pods as listed from its cache, in
// protobuf (what client-go's clientset asks for first for the built-in
// types) and in JSON (for a client that asks for nothing else).
type capturedBodies struct {
	Proto      []byte `json:"proto"`
	ProtoType  string `json:"proto_type"`
	Text       []byte `json:"text"`
	TextType   string `json:"text_type"`
	Nodes      []byte `json:"nodes"`
	Pods       []byte `json:"pods"`
	NodesProto []byte `json:"nodes_proto"`
	PodsProto  []byte `json:"pods_proto"`
}

// kubeProtobuf is the Kubernetes API's protobuf media type.
const kubeProtobuf = "application/vnd.kubernetes.protobuf"

// replayServed counts what the replay server answered, by what.
type replayServed struct {
	Protobuf int64 `json:"protobuf"`
	Text     int64 `json:"text"`
	// Lists are the node and pod lists, ListsProtobuf those in protobuf.
	Lists         int64 `json:"lists"`
	ListsProtobuf int64 `json:"lists_protobuf"`
	// Connections are the connections accepted (each a TLS handshake).
	Connections int64 `json:"connections"`
}

// BenchmarkMetricsSteadyState runs the platform's workers, as 'kubebyon
// worker' runs them, over 1,000 ready clusters (BENCH_METRICS_CLUSTERS)
// whose control planes are all scraped every interval (60 s, the default
// setting), for BENCH_METRICS_DURATION (default 5 minutes). The first
// interval and 15 s more (or the first half of a shorter run) are
// warm-up: every cluster's first scrape, due within the first interval
// and queued by the dispatcher every 5 s, makes its connection. It
// answers the question of issue 15: what does scraping cost the platform
// per scrape, per cluster and in all? The goal is under 0.25 core for
// 1,000 clusters on the 2-core machine the issue measured on.
//
// The control planes are one stand-in, in a process of its own so that
// its CPU is not the platform's (BenchmarkMetricsReplayServer): it replays the
// /metrics, the nodes and the pods a real kube-apiserver answered after
// some traffic (BenchmarkMetricsCaptureHelper, also in a process of its own,
// so that its apiserver and etcd are gone before the measurement), in the
// format the scrape negotiates (protobuf; BENCH_METRICS_FORMAT=text
// replays the text exposition instead, as an apiserver without protobuf
// would). Every scrape reads the same counters, so the rates are zero and
// no alert is raised; parsing and storing cost the same. Each cluster's
// client configuration names its own TLS server, so each has its own
// transport and connection, as the clusters' distinct kubeconfigs do. What
// the production VirtualConfig adds per scrape (reading the cluster's
// kubeconfig Secret from the host cluster) is not measured. The stand-in
// counts the connections made to it: each is a TLS handshake.
//
// Only the metrics scrapes are due: seedFleet's other checks (node health,
// join token sync) are deleted, and the clusters' node quota is marked
// switched on so that the platform does not queue a quota sync of each
// against the stand-in, which answers nothing else. The periodic jobs
// still run, metrics_maintain among them (every minute: partitions,
// rollups); its runs must all succeed, and after the run one Maintain as
// of ten minutes later rolls up every row the run wrote.
//
// It reports, over the steady part: this process's cores (the workers,
// River, pgx) and those of the PostgreSQL server testenv started and of
// the stand-in, the scrapes completed per minute, CPU and allocations per
// scrape, connections made per scrape, CPU per MB of /metrics scraped and
// per cluster per minute; and over the run: the clusters scraped within
// the last two intervals, the failed scrapes (rows with up false), the
// RSS before and at its peak, the Go heap in use at the end (mostly the
// idle connections' buffers), the River jobs waiting at the end and the
// warnings logged. BENCH_CPUPROFILE profiles the steady part
// (profileCPU).
func BenchmarkMetricsSteadyState(b *testing.B) {
	duration := 5 * time.Minute
	if s := os.Getenv("BENCH_METRICS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(b, err)
		duration = d
	}
	fleetSize := 1000
	if s := os.Getenv("BENCH_METRICS_CLUSTERS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(b, err)
		fleetSize = n
	}
	format := cmp.Or(os.Getenv("BENCH_METRICS_FORMAT"), "protobuf")
	require.Contains(b, []string{"protobuf", "text"}, format, "BENCH_METRICS_FORMAT")
	ctx := context.Background()

	capturePath := filepath.Join(b.TempDir(), "captured.json")
	bodies := captureMetricsBodies(b, capturePath)
	addr, standIn := startMetricsReplay(b, capturePath, format)
	virtual := func(_ context.Context, c queries.Cluster) (*rest.Config, error) {
		return &rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{
			Insecure: true, ServerName: fmt.Sprintf("c%d.fleet.test", c.ID),
		}}, nil
	}
	// The stand-in answers a scrape as the apiserver did.
	probe, err := virtual(ctx, queries.Cluster{})
	require.NoError(b, err)
	counters, err := metrics.Scrape(ctx, probe, nil)
	require.NoError(b, err)
	require.NotZero(b, counters.Reads, "the replayed /metrics counts no reads")
	require.NotEmpty(b, counters.Objects, "the replayed /metrics counts no objects")

	pool := testenv.DB(b)
	box, err := secrets.New(bytes.Repeat([]byte{5}, 32))
	require.NoError(b, err)
	catalog, err := locale.New()
	require.NoError(b, err)
	seedFleet(b, pool, Fleet{Users: max(1, fleetSize/10), Clusters: fleetSize})
	_, err = pool.Exec(ctx, `UPDATE clusters SET node_quota_enabled = true WHERE slug LIKE '%-fleet'`)
	require.NoError(b, err)
	st, err := metrics.LoadSettings(ctx, queries.New(pool))
	require.NoError(b, err)
	warmup := min(st.Interval()+15*time.Second, duration/2)

	warnings := &logLines{}
	logger := slog.New(slog.NewTextHandler(warnings, &slog.HandlerOptions{Level: slog.LevelWarn}))
	_, deps := workerDeps(pool, box, catalog, logger, "", virtual)
	rc, err := jobs.NewClient(deps, jobs.DefaultOptions(true))
	require.NoError(b, err)

	for i := 0; i < b.N; i++ {
		b.ResetTimer()
		// Only the scrapes are due: within the first interval, spread
		// over it, as the migration schedules the clusters ready at the
		// upgrade.
		_, err := pool.Exec(ctx, `DELETE FROM cluster_checks WHERE kind <> 'metrics_scrape'`)
		require.NoError(b, err)
		_, err = pool.Exec(ctx, `INSERT INTO cluster_checks (cluster_id, kind, due_at)
			SELECT id, 'metrics_scrape', now() + random() * make_interval(secs => $1) FROM clusters WHERE status = 'ready'
			ON CONFLICT (cluster_id, kind) DO UPDATE SET due_at = excluded.due_at, failures = 0, unreachable_since = NULL`,
			st.Interval().Seconds())
		require.NoError(b, err)
		// The peak RSS from here on (VmHWM, reset by clear_refs 5).
		require.NoError(b, os.WriteFile("/proc/self/clear_refs", []byte("5"), 0))
		rssBefore := rssMiB(b)
		start := time.Now()
		require.NoError(b, rc.Start(ctx))
		time.Sleep(warmup)

		steady := time.Now()
		served0 := replayStats(b, addr)
		cpu0, pg0, standIn0 := cpuTime(b), ownPostgresCPU(), processCPU(b, standIn)
		var mem0 runtime.MemStats
		runtime.ReadMemStats(&mem0)
		stopProfile := profileCPU(b, "metrics_steady_state")
		time.Sleep(duration - warmup)
		end := time.Now()
		cpu1, pg1, standIn1 := cpuTime(b), ownPostgresCPU(), processCPU(b, standIn)
		var mem1 runtime.MemStats
		runtime.ReadMemStats(&mem1)
		stopProfile()
		waiting := waitingJobs(b, ctx, pool)
		peak := peakRSSMiB(b)
		b.StopTimer()
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_ = rc.StopAndCancel(stopCtx)
		cancel()

		var scrapes, failedSteady, failedAll, recent int
		require.NoError(b, pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE at >= $1 AND at < $2),
			count(*) FILTER (WHERE at >= $1 AND at < $2 AND NOT up),
			count(*) FILTER (WHERE NOT up),
			count(DISTINCT cluster_id) FILTER (WHERE up AND at >= $3)
			FROM cluster_metrics WHERE at >= $4`,
			steady, end, end.Add(-2*st.Interval()), start).Scan(&scrapes, &failedSteady, &failedAll, &recent))
		var backingOff int
		require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM cluster_checks
			WHERE kind = 'metrics_scrape' AND failures > 0`).Scan(&backingOff))
		var scrapeJobsErrored, maintainRuns, maintainFailed int
		require.NoError(b, pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE kind = 'metrics_scrape' AND errors IS NOT NULL),
			count(*) FILTER (WHERE kind = 'metrics_maintain' AND state = 'completed'),
			count(*) FILTER (WHERE kind = 'metrics_maintain' AND (errors IS NOT NULL OR state IN ('discarded', 'cancelled', 'retryable')))
			FROM river_job WHERE created_at >= $1`, start).Scan(&scrapeJobsErrored, &maintainRuns, &maintainFailed))
		var rows5m int
		require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM cluster_metrics_5m`).Scan(&rows5m))
		served := replayStats(b, addr)

		body, bodyType := bodies.Proto, bodies.ProtoType
		if served.Text > served.Protobuf {
			body, bodyType = bodies.Text, bodies.TextType
		}
		b.Logf("replayed /metrics: %s, %d bytes (text exposition %d bytes); nodes and pods: %d and %d bytes of JSON, %d and %d of protobuf; served %+v",
			bodyType, len(body), len(bodies.Text), len(bodies.Nodes), len(bodies.Pods), len(bodies.NodesProto), len(bodies.PodsProto), served)
		steadySeconds := end.Sub(steady).Seconds()
		cpu := (cpu1 - cpu0).Seconds()
		perScrape := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(max(scrapes, 1)) }
		b.ReportMetric(float64(fleetSize), "clusters")
		b.ReportMetric(cpu/steadySeconds, "cores")
		b.ReportMetric(cpu/steadySeconds*1000/float64(fleetSize), "cores-per-1000-clusters")
		b.ReportMetric((pg1-pg0).Seconds()/steadySeconds, "postgres-cores")
		b.ReportMetric((standIn1-standIn0).Seconds()/steadySeconds, "standin-cores")
		b.ReportMetric(float64(scrapes)/(steadySeconds/60), "scrapes/min")
		b.ReportMetric(perScrape(cpu1-cpu0), "cpu-us/scrape")
		b.ReportMetric(perScrape(pg1-pg0), "postgres-cpu-us/scrape")
		b.ReportMetric(perScrape(cpu1-cpu0)/(float64(len(body))/1e6), "cpu-us/MB-scraped")
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(fleetSize)/(steadySeconds/60), "cpu-us/cluster-min")
		b.ReportMetric(float64(mem1.TotalAlloc-mem0.TotalAlloc)/1024/float64(max(scrapes, 1)), "alloc-KiB/scrape")
		b.ReportMetric(float64(served.Connections-served0.Connections)/float64(max(scrapes, 1)), "connections/scrape")
		b.ReportMetric(float64(len(body))/1024, "metrics-body-KiB")
		b.ReportMetric(float64(recent), "clusters-scraped-2-intervals")
		b.ReportMetric(float64(failedAll), "scrapes-failed")
		b.ReportMetric(float64(failedSteady), "scrapes-failed-steady")
		b.ReportMetric(float64(backingOff), "checks-backing-off")
		b.ReportMetric(float64(scrapeJobsErrored), "scrape-jobs-errored")
		b.ReportMetric(rssBefore, "RSS-before-MiB")
		b.ReportMetric(peak, "max-RSS-running-MiB")
		b.ReportMetric((peak-rssBefore)*1024/float64(fleetSize), "RSS-growth-KiB/cluster")
		b.ReportMetric(float64(mem1.HeapInuse)/(1<<20), "heap-inuse-end-MiB")
		b.ReportMetric(float64(waiting), "jobs-waiting-end")
		b.ReportMetric(float64(maintainRuns), "maintain-runs")
		b.ReportMetric(float64(rows5m), "rollup-5m-rows-in-run")
		b.ReportMetric(float64(warnings.count()), "log-warnings")
		for _, l := range warnings.firstLines() {
			b.Log(strings.TrimSpace(l))
		}
		require.Zero(b, maintainFailed, "metrics_maintain runs failed")
		require.Zero(b, scrapeJobsErrored, "scrape jobs returned errors")
	}

	// The rollups catch up with every row the run wrote, as they would
	// ten minutes later.
	cpu0, t0 := cpuTime(b), time.Now()
	require.NoError(b, (&metrics.Service{Pool: pool}).Maintain(ctx, time.Now().Add(10*time.Minute), st, logger))
	b.ReportMetric(float64(time.Since(t0).Milliseconds()), "maintain-catchup-ms")
	b.ReportMetric(float64((cpuTime(b) - cpu0).Milliseconds()), "maintain-catchup-cpu-ms")
	var rows5m, rows1h int
	require.NoError(b, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM cluster_metrics_5m), (SELECT count(*) FROM cluster_metrics_1h)`).Scan(&rows5m, &rows1h))
	b.ReportMetric(float64(rows5m), "rollup-5m-rows")
	b.ReportMetric(float64(rows1h), "rollup-1h-rows")
	require.NotZero(b, rows5m, "nothing rolled up")
}

// captureMetricsBodies runs BenchmarkMetricsCaptureHelper in a process of its
// own, which writes the bodies to path, and reads them.
func captureMetricsBodies(b *testing.B, path string) capturedBodies {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkMetricsCaptureHelper$", "-test.benchtime=1x", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), metricsCaptureEnv+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	require.NoError(b, err, "capture helper:\n%s", out)
	raw, err := os.ReadFile(path)
	require.NoError(b, err, "capture helper:\n%s", out)
	var bodies capturedBodies
	require.NoError(b, json.Unmarshal(raw, &bodies))
	return bodies
}

// startMetricsReplay runs BenchmarkMetricsReplayServer in a process of its own,
// serving the bodies captured at path (the text exposition only, for
// format "text"), and returns its address and process id. The process
// ends when the benchmark does.
func startMetricsReplay(b *testing.B, path, format string) (addr string, pid int) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkMetricsReplayServer$", "-test.benchtime=1x", "-test.timeout=0")
	cmd.Env = append(os.Environ(), metricsReplayEnv+"="+path, "BENCH_METRICS_FORMAT="+format)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(b, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())

	found := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if a, ok := strings.CutPrefix(lines.Text(), metricsReplayAt); ok {
				found <- a
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(exited)
	}()
	// Closing its stdin ends it; a server that does not stop is killed.
	b.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case addr = <-found:
		return addr, cmd.Process.Pid
	case <-exited:
		b.Fatalf("replay server ended before serving:\n%s", stderr.String())
	case <-time.After(time.Minute):
		b.Fatal("replay server did not start within a minute")
	}
	return "", 0
}

// replayStats asks the replay server what it served.
func replayStats(b *testing.B, addr string) replayServed {
	b.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the benchmark's own stand-in
	}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + addr + "/debug/replay")
	require.NoError(b, err)
	defer resp.Body.Close()
	var s replayServed
	require.NoError(b, json.NewDecoder(resp.Body).Decode(&s))
	return s
}

// BenchmarkMetricsCaptureHelper measures nothing: it is a helper process of
// BenchmarkMetricsSteadyState, which runs the test binary again with only
// it and metricsCaptureEnv naming a file; without that it is skipped. It
// starts a real kube-apiserver, drives traffic at it (exerciseAPIServer),
// waits until the apiserver has counted its objects, and writes what it
// then answers a scrape (capturedBodies) to the file.
func BenchmarkMetricsCaptureHelper(t *testing.B) {
	out := os.Getenv(metricsCaptureEnv)
	if out == "" {
		t.Skip("helper process of BenchmarkMetricsSteadyState, run by it")
	}
	k := testenv.NewKube(t)
	stopWatches := exerciseAPIServer(t, k.Config)
	defer stopWatches()

	var bodies capturedBodies
	// The apiserver counts the objects stored every minute or so (its
	// --etcd-count-metric-poll-period): a production apiserver's
	// /metrics has the counts.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		bodies.Proto, bodies.ProtoType = getAPIServer(t, k.Config, "/metrics", string(expfmt.FmtProtoDelim))
		c, err := metrics.Parse(bytes.NewReader(bodies.Proto), expfmt.ResponseFormat(http.Header{"Content-Type": {bodies.ProtoType}}))
		require.NoError(t, err)
		if c.Objects["configmaps"] > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Second)
	}
	bodies.Text, bodies.TextType = getAPIServer(t, k.Config, "/metrics", string(expfmt.FmtText))
	bodies.Nodes, _ = getAPIServer(t, k.Config, "/api/v1/nodes?resourceVersion=0", "application/json")
	bodies.Pods, _ = getAPIServer(t, k.Config, "/api/v1/pods?resourceVersion=0", "application/json")
	bodies.NodesProto, _ = getAPIServer(t, k.Config, "/api/v1/nodes?resourceVersion=0", kubeProtobuf)
	bodies.PodsProto, _ = getAPIServer(t, k.Config, "/api/v1/pods?resourceVersion=0", kubeProtobuf)
	raw, err := json.Marshal(bodies)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(out, raw, 0o600))
}

// BenchmarkMetricsReplayServer measures nothing: it is a helper process of
// BenchmarkMetricsSteadyState, which runs the test binary again with only
// it and metricsReplayEnv naming the file BenchmarkMetricsCaptureHelper wrote;
// without that it is skipped. It stands in for every cluster's control
// plane: an HTTPS server (HTTP/2, as an apiserver) that answers /metrics
// with the captured exposition in the format the request negotiates (the
// text one only, with BENCH_METRICS_FORMAT=text), and the node and pod
// lists with the captured ones, until its stdin closes. It prints its
// address on stdout, and tells what it served at /debug/replay.
func BenchmarkMetricsReplayServer(t *testing.B) {
	path := os.Getenv(metricsReplayEnv)
	if path == "" {
		t.Skip("helper process of BenchmarkMetricsSteadyState, run by it")
	}
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var bodies capturedBodies
	require.NoError(t, json.Unmarshal(raw, &bodies))
	textOnly := os.Getenv("BENCH_METRICS_FORMAT") == "text"

	var protobuf, text, lists, listsProtobuf, connections atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		body, contentType := bodies.Proto, bodies.ProtoType
		if textOnly || expfmt.Negotiate(r.Header).FormatType() != expfmt.TypeProtoDelim {
			body, contentType = bodies.Text, bodies.TextType
			text.Add(1)
		} else {
			protobuf.Add(1)
		}
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	})
	// Protobuf when it is the first type the client accepts, as the
	// apiserver answers a clientset.
	list := func(body, proto []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			lists.Add(1)
			answer, contentType := body, "application/json"
			if strings.HasPrefix(r.Header.Get("Accept"), kubeProtobuf) {
				answer, contentType = proto, kubeProtobuf
				listsProtobuf.Add(1)
			}
			w.Header().Set("Content-Type", contentType)
			_, _ = w.Write(answer)
		}
	}
	mux.HandleFunc("GET /api/v1/nodes", list(bodies.Nodes, bodies.NodesProto))
	mux.HandleFunc("GET /api/v1/pods", list(bodies.Pods, bodies.PodsProto))
	mux.HandleFunc("GET /debug/replay", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(replayServed{
			Protobuf: protobuf.Load(), Text: text.Load(), Lists: lists.Load(), ListsProtobuf: listsProtobuf.Load(),
			Connections: connections.Load(),
		})
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			connections.Add(1)
		}
	}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	fmt.Println(metricsReplayAt + srv.Listener.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.CloseClientConnections()
	srv.Close()
}

// getAPIServer is the apiserver's answer to a GET of path with the Accept
// header given, uncompressed, and its Content-Type.
func getAPIServer(t testing.TB, cfg *rest.Config, path, accept string) ([]byte, string) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodGet, cfg.Host+path, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", accept)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, body)
	return body, resp.Header.Get("Content-Type")
}

// exerciseAPIServer gives the apiserver a small cluster's objects and the
// traffic of one in use, so that its /metrics has the series and the
// histogram data a production apiserver's has: 10 Ready nodes and 30
// Running pods (with the status a kubelet writes), 200 ConfigMaps
// created, listed, read, updated, patched and some deleted, two watches
// left open (stop them with the function returned), and a list, a get and
// a delete (of a missing name) of every resource, cluster-wide and in a
// namespace.
func exerciseAPIServer(t testing.TB, cfg *rest.Config) (stopWatches func()) {
	t.Helper()
	ctx := context.Background()
	kc, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metricsNamespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// No controller-manager makes the default ServiceAccount pods need.
	_, err = kc.CoreV1().ServiceAccounts(metricsNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	for i := range 10 {
		want := fleetNode(i)
		n, err := kc.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
		require.NoError(t, err)
		n.Status = want.Status
		_, err = kc.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	for i := range 30 {
		want := fleetPod(i)
		p, err := kc.CoreV1().Pods(metricsNamespace).Create(ctx, want, metav1.CreateOptions{})
		require.NoError(t, err)
		status := want.Status
		status.QOSClass = p.Status.QOSClass
		p.Status = status
		_, err = kc.CoreV1().Pods(metricsNamespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		require.NoError(t, err)
	}

	cms := kc.CoreV1().ConfigMaps(metricsNamespace)
	cmWatch, err := cms.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	podWatch, err := kc.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, w := range []watch.Interface{cmWatch, podWatch} {
		go func() {
			for range w.ResultChan() {
			}
		}()
	}
	stopWatches = func() {
		cmWatch.Stop()
		podWatch.Stop()
	}
	data := map[string]string{"config.yaml": strings.Repeat("key: value\n", 40)}
	for i := range 200 {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}, Data: data}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for page := ""; ; {
		l, err := cms.List(ctx, metav1.ListOptions{Limit: 50, Continue: page})
		require.NoError(t, err)
		if page = l.Continue; page == "" {
			break
		}
	}
	for i := range 200 {
		cm, err := cms.Get(ctx, fmt.Sprintf("cm-%03d", i), metav1.GetOptions{})
		require.NoError(t, err)
		switch {
		case i%4 == 0:
			cm.Data["updated"] = "true"
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		case i%4 == 1:
			_, err = cms.Patch(ctx, cm.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"true"}}}`), metav1.PatchOptions{})
		case i%10 == 2:
			err = cms.Delete(ctx, cm.Name, metav1.DeleteOptions{})
		}
		require.NoError(t, err)
	}

	dc, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	lists, err := disco.ServerPreferredResources()
	require.NoError(t, err)
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		require.NoError(t, err)
		for _, r := range l.APIResources {
			res := dc.Resource(gv.WithResource(r.Name))
			if _, err := res.List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				continue // not listable
			}
			_, _ = res.Get(ctx, "missing", metav1.GetOptions{})
			_ = res.Delete(ctx, "missing", metav1.DeleteOptions{})
			if r.Namespaced {
				in := res.Namespace(metricsNamespace)
				_, _ = in.List(ctx, metav1.ListOptions{Limit: 1})
				_, _ = in.Get(ctx, "missing", metav1.GetOptions{})
				_ = in.Delete(ctx, "missing", metav1.DeleteOptions{})
			}
		}
	}
	return stopWatches
}

// fleetNode is a Ready node as a kubelet reports it.
func fleetNode(i int) *corev1.Node {
	name := fmt.Sprintf("node-%02d", i)
	now := metav1.Now()
	quantities := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("500Gi"),
	}
	condition := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, LastHeartbeatTime: now, LastTransitionTime: now, Reason: reason, Message: message}
	}
	var images []corev1.ContainerImage
	for j := range 12 {
		img := fmt.Sprintf("registry.example.com/team/image-%02d", j)
		images = append(images, corev1.ContainerImage{
			Names:     []string{img + "@sha256:" + strings.Repeat(strconv.Itoa(j%10), 64), img + ":v1." + strconv.Itoa(j)},
			SizeBytes: int64(20_000_000 + j*7_000_000),
		})
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
			"node.kubernetes.io/instance-type": "bare-metal", "topology.kubernetes.io/zone": "rack-1",
		}},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.244.%d.0/24", i), PodCIDRs: []string{fmt.Sprintf("10.244.%d.0/24", i)}},
		Status: corev1.NodeStatus{
			Capacity: quantities, Allocatable: quantities,
			Conditions: []corev1.NodeCondition{
				condition(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				condition(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				condition(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				condition(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.0.%d", 10+i)},
				{Type: corev1.NodeHostName, Address: name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID: fmt.Sprintf("%032x", i), SystemUUID: fmt.Sprintf("4c4c4544-0042-%04d-8031-b7c04f564d32", i),
				BootID: fmt.Sprintf("%08x-1c2d-4e5f-8a9b-0c1d2e3f4a5b", i), KernelVersion: "6.1.0-28-amd64",
				OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://1.7.24",
				KubeletVersion: "v1.34.0", OperatingSystem: "linux", Architecture: "amd64",
			},
			Images: images,
		},
	}
}

// fleetPod is a Running pod of a Deployment, as a kubelet reports it.
func fleetPod(i int) *corev1.Pod {
	app := fmt.Sprintf("app-%d", i%6)
	node := fmt.Sprintf("node-%02d", i%10)
	now := metav1.Now()
	condition := func(typ corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: now}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("%s-7d9f8c6b5-%05d", app, i),
			Labels: map[string]string{"app.kubernetes.io/name": app, "pod-template-hash": "7d9f8c6b5"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d9f8c6b5",
				UID: types.UID(fmt.Sprintf("6f1c2d3e-4a5b-4c6d-8e7f-%012d", i%6)), Controller: new(true), BlockOwnerDeletion: new(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example.com/team/" + app + ":v1.2.3",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{
					{Name: "LOG_LEVEL", Value: "info"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}},
			}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				condition(corev1.PodReadyToStartContainers), condition(corev1.PodInitialized),
				condition(corev1.PodReady), condition(corev1.ContainersReady), condition(corev1.PodScheduled),
			},
			HostIP: fmt.Sprintf("10.0.0.%d", 10+i%10), PodIP: fmt.Sprintf("10.244.%d.%d", i%10, 10+i),
			PodIPs:    []corev1.PodIP{{IP: fmt.Sprintf("10.244.%d.%d", i%10, 10+i)}},
			StartTime: &now,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", Ready: true, Started: new(true),
				Image:       "registry.example.com/team/" + app + ":v1.2.3",
				ImageID:     "registry.example.com/team/" + app + "@sha256:" + strings.Repeat("a", 64),
				ContainerID: "containerd://" + strings.Repeat(strconv.Itoa(i%10), 64),
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			}},
		},
	}
}

// ownPostgresCPU is the CPU time the PostgreSQL server testenv started
// (a child of this process) has used so far: its postmaster's, the
// backends' it reaped, and each live backend's; zero with
// TEST_DATABASE_URL. readCPU counts every postgres process on the
// machine, other test binaries' too.
func ownPostgresCPU() time.Duration {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	procs := make([]procStat, 0, len(paths))
	postmasters := map[int]bool{}
	for _, p := range paths {
		s, ok := readProcStat(p)
		if !ok {
			continue // gone since the glob
		}
		procs = append(procs, s)
		if s.comm == "postgres" && s.ppid == os.Getpid() {
			postmasters[s.pid] = true
		}
	}
	var total time.Duration
	for _, s := range procs {
		switch {
		case postmasters[s.pid]:
			total += s.cpu + s.reaped
		case postmasters[s.ppid]:
			total += s.cpu
		}
	}
	return total
}

// processCPU is the CPU time process pid has used so far, its reaped
// children's included.
func processCPU(b *testing.B, pid int) time.Duration {
	s, ok := readProcStat(fmt.Sprintf("/proc/%d/stat", pid))
	require.True(b, ok, "process %d is gone", pid)
	return s.cpu + s.reaped
}

// procStat is what /proc/<pid>/stat says of a process.
type procStat struct {
	pid, ppid int
	comm      string
	// cpu is its user and system time; reaped its waited-for children's.
	cpu, reaped time.Duration
}

func readProcStat(path string) (procStat, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, false
	}
	s := string(raw)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return procStat{}, false
	}
	// After the command: state, ppid, then 9 fields, then utime, stime,
	// cutime and cstime.
	f := strings.Fields(s[closing+1:])
	if len(f) < 15 {
		return procStat{}, false
	}
	ticks := func(i int) time.Duration {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		return time.Duration(n) * time.Second / clockTicks
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(s[:open]))
	ppid, _ := strconv.Atoi(f[1])
	return procStat{pid: pid, ppid: ppid, comm: s[open+1 : closing], cpu: ticks(11) + ticks(12), reaped: ticks(13) + ticks(14)}, true
}

// logLines counts the lines logged and keeps the first few, for the
// report.
type logLines struct {
	mu    sync.Mutex
	n     int
	first []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if len(l.first) < 5 {
		l.first = append(l.first, string(p))
	}
	return len(p), nil
}

func (l *logLines) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *logLines) firstLines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.first...)
}
