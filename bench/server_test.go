package bench

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/services"
	"github.com/kubebyon/kubebyon/internal/sessioncache"
)

// The environment that makes this test binary the page benchmarks'
// server process (TestMain): the database, the secrets key (hex) and the
// base URL. The process serves on the listener it gets as file 3, and
// its control endpoints (benchControl) on file 4.
const (
	benchServeDB   = "BENCH_SERVE_DB"
	benchServeKey  = "BENCH_SERVE_KEY"
	benchServeBase = "BENCH_SERVE_BASE"
)

// target is the platform's server as the load sees it from outside: its
// base URL, its process (whose CPU time a load counts as the server's)
// and its control endpoints.
type target struct {
	url     string
	pid     int
	control string
}

// benchServer starts the platform's handlers in a process of their own
// (this test binary started again, benchServe), on a web pool of pool's
// database (database.ConnectWeb, as serve does) with its session cache, with the services the
// pages and the join endpoint use and an insert-only River client (no
// jobs run), behind a trusted proxy on the loopback network, logging
// every request as serve does (text, at info) to a file. The load
// generator is then a client like wrk: its own CPU time and scheduling
// are not the server's, as they were when both shared one process.
func benchServer(b *testing.B, pool *pgxpool.Pool, key []byte) *target {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	files := make([]*os.File, 2)
	for i, l := range []net.Listener{ln, ctl} {
		files[i], err = l.(*net.TCPListener).File()
		require.NoError(b, err)
		require.NoError(b, l.Close()) // the copy in files stays open
	}
	baseURL := "http://" + ln.Addr().String()
	log, err := os.Create(filepath.Join(b.TempDir(), "serve.log"))
	require.NoError(b, err)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(),
		benchServeDB+"="+pool.Config().ConnString(), benchServeKey+"="+hex.EncodeToString(key), benchServeBase+"="+baseURL)
	cmd.ExtraFiles = files
	cmd.Stdout, cmd.Stderr = log, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(b, cmd.Start())
	for _, f := range files {
		f.Close()
	}
	log.Close()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	t := &target{url: baseURL, pid: cmd.Process.Pid, control: "http://" + ctl.Addr().String()}
	// It answers once its pool is open.
	require.Eventually(b, func() bool {
		resp, err := http.Get(baseURL + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 50*time.Millisecond, "the bench server answers /healthz")
	return t
}

// call asks the server's control endpoint path.
func (t *target) call(b *testing.B, path string) {
	b.Helper()
	resp, err := http.Post(t.control+path, "", nil)
	require.NoError(b, err)
	resp.Body.Close()
	require.Equal(b, http.StatusNoContent, resp.StatusCode, path)
}

// gc collects the server's heap, so that a load does not pay for the
// garbage of the one before.
func (t *target) gc(b *testing.B) { t.call(b, "/gc") }

// profile starts a CPU profile of the server for the load name when
// BENCH_CPUPROFILE names a directory, written there as <name>.pprof when
// the returned function is called, with the allocations before and after
// (<name>.allocs0.pprof, <name>.allocs.pprof); without it, it does
// nothing.
func (t *target) profile(b *testing.B, name string) (stop func()) {
	dir := os.Getenv("BENCH_CPUPROFILE")
	if dir == "" {
		return func() {}
	}
	t.call(b, "/profile/start?path="+url.QueryEscape(filepath.Join(dir, name)))
	return func() { t.call(b, "/profile/stop") }
}

// benchServe serves the platform's handlers as benchServer describes,
// until interrupted: it is the process the page benchmarks measure.
func benchServe() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		return 1
	}
	key, err := hex.DecodeString(os.Getenv(benchServeKey))
	if err != nil {
		return fail(err)
	}
	box, err := secrets.New(key)
	if err != nil {
		return fail(err)
	}
	web, err := database.ConnectWeb(ctx, os.Getenv(benchServeDB))
	if err != nil {
		return fail(err)
	}
	defer web.Close()
	catalog, err := locale.New()
	if err != nil {
		return fail(err)
	}
	rc, err := river.NewClient(riverpgxv5.New(web), &river.Config{})
	if err != nil {
		return fail(err)
	}
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))
	svc := services.New(services.Config{Pool: web, Box: box, Logger: logger, Catalog: catalog, BaseURL: os.Getenv(benchServeBase)})
	svc.SetRiver(rc)
	// The signed-in sessions kept as serve keeps them.
	sessions := sessioncache.New(web, logger, sessioncache.TTL)
	go sessions.Run(ctx)
	for !sessions.Listening() {
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		time.Sleep(10 * time.Millisecond)
	}
	h := handlers.New(handlerstest.Deps(svc, handlers.Deps{
		Pool: web, River: rc, Logger: logger, Catalog: catalog,
		BaseURL: os.Getenv(benchServeBase), Metrics: reg, Gatherer: reg, TrustedProxies: []*net.IPNet{loopback},
		Box: box, SessionCache: sessions,
	}))
	listeners := make([]net.Listener, 2)
	for i := range listeners {
		if listeners[i], err = net.FileListener(os.NewFile(uintptr(3+i), "listener")); err != nil {
			return fail(err)
		}
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	ctl := &http.Server{Handler: benchControl(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(listeners[0]) }()
	go func() { _ = ctl.Serve(listeners[1]) }()
	<-ctx.Done()
	_ = ctl.Close()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(stopCtx)
	return 0
}

// benchControl is the bench server's control endpoints: POST /gc collects
// the heap; POST /profile/start?path=P starts a CPU profile into P.pprof
// (the allocations so far into P.allocs0.pprof), /profile/stop ends it
// (the allocations into P.allocs.pprof).
func benchControl() http.Handler {
	mux := http.NewServeMux()
	var profile *os.File
	var path string
	fail := func(w http.ResponseWriter, err error) { http.Error(w, err.Error(), http.StatusInternalServerError) }
	mux.HandleFunc("POST /gc", func(w http.ResponseWriter, _ *http.Request) {
		runtime.GC()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /profile/start", func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Query().Get("path")
		if err := writeHeapProfile(path + ".allocs0.pprof"); err != nil {
			fail(w, err)
			return
		}
		f, err := os.Create(path + ".pprof")
		if err != nil {
			fail(w, err)
			return
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			fail(w, err)
			return
		}
		profile = f
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /profile/stop", func(w http.ResponseWriter, _ *http.Request) {
		pprof.StopCPUProfile()
		if profile != nil {
			if err := profile.Close(); err != nil {
				fail(w, err)
				return
			}
			profile = nil
		}
		if err := writeHeapProfile(path + ".allocs.pprof"); err != nil {
			fail(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// writeHeapProfile writes the allocations so far to path: those of a
// load are the difference between two (go tool pprof
// -sample_index=alloc_space -diff_base <name>.allocs0.pprof
// <name>.allocs.pprof).
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
