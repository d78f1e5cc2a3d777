package edgeagent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestMain stops the PostgreSQL server that the benchmark's database
// (testenv.DB) starts.
func TestMain(m *testing.M) { testenv.Main(m) }

// BenchmarkChangeToHAProxy measures, with 10,000 NodePort clusters and
// three Ready host nodes in the database, what a change costs on its way
// to HAProxy: working out the desired state (what the edge config API
// does once per change), its size as JSON, and the agent's apply of a
// state with one cluster more on a running HAProxy that already serves
// the 10,000: render, write and haproxy -c, then the reload through the
// master socket until the new worker serves it. BENCH_EDGE_CLUSTERS and
// BENCH_EDGE_HOSTS set other numbers: HAProxy needs a file descriptor per
// checked server (clusters x host nodes x 2) beyond its connections, and
// refuses to start where the limit (ulimit -n) is lower.
func BenchmarkChangeToHAProxy(b *testing.B) {
	ctx := context.Background()
	pool := testenv.DB(b)
	q := queries.New(pool)
	clusters, hosts := 10_000, 3
	if n, err := strconv.Atoi(os.Getenv("BENCH_EDGE_CLUSTERS")); err == nil {
		clusters = n
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_EDGE_HOSTS")); err == nil {
		hosts = n
	}
	_, err := pool.Exec(ctx, `INSERT INTO users (email, name) VALUES ('bench@example.com', 'Bench')`)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `
		INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, node_port, konnectivity_node_port, status)
		SELECT (SELECT id FROM users), 'c' || i, 'cluster-' || i, 'v1.34.0', 'nodeport', 10000 + i, 20000 + i, 'ready'
		FROM generate_series(1, $1::int) i`, clusters)
	require.NoError(b, err)
	for i := range hosts {
		require.NoError(b, q.HostNodeUpsert(ctx, queries.HostNodeUpsertParams{Name: "host-" + strconv.Itoa(i), InternalIp: "127.0.0." + strconv.Itoa(i+2), Ready: true}))
	}
	rt := settings.Defaults()
	rt.APIBaseDomain = "k.example.com"

	var st edgewire.State
	var desired time.Duration
	for range 5 {
		t0 := time.Now()
		st, err = edge.Desired(ctx, q, rt)
		require.NoError(b, err)
		desired += time.Since(t0)
	}
	require.Len(b, st.Routes, clusters)
	body, err := json.Marshal(st)
	require.NoError(b, err)

	dir := b.TempDir()
	a := &Agent{
		Dir: dir, HAProxy: testenv.HAProxy(b),
		APIBind: "127.0.0.1:" + strconv.Itoa(freePort(b)), KonnectivityBind: "127.0.0.1:" + strconv.Itoa(freePort(b)),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	require.NoError(b, os.MkdirAll(filepath.Join(dir, versionsDir), 0o700))
	require.NoError(b, a.write(ctx, st))
	a.MasterSocket = filepath.Join(dir, MasterSocketFile)
	t0 := time.Now()
	stop, err := a.startHAProxy(ctx, make(chan error, 1))
	require.NoError(b, err)
	b.Cleanup(stop)
	start := time.Since(t0)

	var write, reload time.Duration
	n := 0
	for b.Loop() {
		n++
		next := append(st.Routes[:len(st.Routes):len(st.Routes)], edgewire.Route{
			ClusterID: int64(clusters + n), Host: "new-" + strconv.Itoa(n) + ".k.example.com",
			API: []edgewire.Server{{Address: "127.0.0.2", Port: 9000}}, Konnectivity: []edgewire.Server{{Address: "127.0.0.2", Port: 9001}},
		})
		s, err := edgewire.NewState(next, nil)
		require.NoError(b, err)
		// Apply's two steps, timed apart.
		t0 := time.Now()
		require.NoError(b, a.write(ctx, s))
		t1 := time.Now()
		require.NoError(b, a.reload(ctx, s.Version))
		write, reload = write+t1.Sub(t0), reload+time.Since(t1)
		a.applied = s.Version
		a.prune(s.Version)
	}
	b.ReportMetric(float64(desired.Milliseconds())/5, "desired-ms")
	b.ReportMetric(float64(len(body))/1024, "state-json-KiB")
	b.ReportMetric(float64(start.Milliseconds()), "haproxy-start-ms")
	b.ReportMetric(float64(write.Milliseconds())/float64(n), "render-check-ms")
	b.ReportMetric(float64(reload.Milliseconds())/float64(n), "reload-ms")
}
