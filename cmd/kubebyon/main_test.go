package main_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

// binary is the kubebyon command built once for these tests, with
// testVersion as its version, as 'make build' sets it.
var binary string

const testVersion = "v0.0.0-test"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kubebyon-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "kubebyon")
	out, err := exec.Command("go", "build", "-ldflags", "-X main.version="+testVersion, "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build kubebyon: %v\n%s", err, out)
		os.Exit(1)
	}
	code := testenv.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// result of one finished command.
type result struct {
	code           int
	stdout, stderr string
}

// kubebyon runs the binary to completion with env added to a clean
// environment.
func kubebyon(t testing.TB, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// freeAddr returns a loopback address with a port nothing listens on (and
// that no other freeAddr or freePort of this process returned).
func freeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(unusedPort(t, "127.0.0.1")))
}

// handedOut holds every port unusedPort gave in this test process: once
// its listener is closed the kernel may give the same port to the next
// bind, and two listeners of one server (its metrics and its edge's
// konnectivity port, say) must not be handed one port.
var handedOut sync.Map

// unusedPort is a port nothing listens on at host ("0.0.0.0" for every
// address), never one it gave before.
func unusedPort(t testing.TB, host string) int {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		require.NoError(t, ln.Close())
		if _, given := handedOut.LoadOrStore(port, true); !given {
			return port
		}
	}
}

// server is a running 'kubebyon serve'.
type server struct {
	cmd         *exec.Cmd
	addr        string
	metricsAddr string
	stderr      *testenv.Output
	done        chan error
}

func startServe(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	s := &server{addr: freeAddr(t), metricsAddr: freeAddr(t), stderr: &testenv.Output{}, done: make(chan error, 1)}
	s.cmd = exec.Command(binary, append([]string{"serve", "--listen", s.addr, "--metrics-listen", s.metricsAddr}, args...)...)
	s.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	s.cmd.Stderr = s.stderr
	require.NoError(t, s.cmd.Start())
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
	})
	return s
}

// waitReady polls /readyz until it answers 200.
func (s *server) waitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.done:
			s.done <- err // for the cleanup
			t.Fatalf("serve exited early (%v): %s", err, s.stderr)
		default:
		}
		resp, err := http.Get("http://" + s.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("serve never became ready: %s", s.stderr)
}

// stop sends SIGTERM and expects a clean exit.
func (s *server) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-s.done:
		require.NoError(t, err, "serve did not exit cleanly: %s", s.stderr)
		s.done <- nil // for the cleanup
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop after SIGTERM: %s", s.stderr)
	}
}

// TestServeWithEmbeddedPostgres is 'make run' on a fresh machine: no
// DATABASE_URL, so serve starts its own PostgreSQL in the data dir. Data
// survives a restart, and SIGTERM stops PostgreSQL too.
func TestServeWithEmbeddedPostgres(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	env := []string{"KUBEBYON_DATA_DIR=" + dataDir}

	s := startServe(t, env, "--migrate")
	s.waitReady(t)
	key, err := os.ReadFile(filepath.Join(dataDir, "secret.key"))
	require.NoError(t, err)

	// The admin command shares the running server's PostgreSQL.
	r := kubebyon(t, env, "correct horse battery staple\n", "admin", "create", "--email", "ops@example.com", "--password-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "created admin ops@example.com")

	s.stop(t)
	pid := filepath.Join(dataDir, "postgres", "pgdata", "postmaster.pid")
	require.NoFileExists(t, pid, "PostgreSQL still running after serve stopped")

	// Restarted without --migrate: the schema is there, and so is the user.
	s = startServe(t, env)
	s.waitReady(t)
	r = kubebyon(t, env, "", "admin", "promote", "--email", "OPS@example.com")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "is now an admin")
	r = kubebyon(t, env, "x\n", "admin", "create", "--email", "ops@example.com")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "exists already")
	s.stop(t)

	again, err := os.ReadFile(filepath.Join(dataDir, "secret.key"))
	require.NoError(t, err)
	require.Equal(t, key, again, "the generated secret key must be kept")
}

// TestMigrate checks that migrate applies the schema once, that a second
// run is a no-op, and that serve and worker refuse an unmigrated database.
func TestMigrate(t *testing.T) {
	t.Parallel()
	env := []string{"DATABASE_URL=" + testenv.EmptyDBURL(t), "KUBEBYON_DATA_DIR=" + t.TempDir()}

	for _, cmd := range [][]string{{"serve", "--listen", freeAddr(t), "--metrics-listen", ""}, {"worker", "--metrics-listen", ""}} {
		r := kubebyon(t, env, "", cmd...)
		require.Equal(t, 1, r.code, cmd)
		require.Contains(t, r.stderr, "schema version is 0, this build needs", cmd)
		require.Contains(t, r.stderr, "run 'kubebyon migrate'", cmd)
	}

	r := kubebyon(t, env, "", "migrate")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "schema migrated from version 0 to")

	r = kubebyon(t, env, "", "migrate")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "nothing to apply")
}

// TestWorkerAndAPISplit is multi-node mode: 'serve --workers=false' answers
// HTTP while 'worker' runs the jobs, on one database.
func TestWorkerAndAPISplit(t *testing.T) {
	t.Parallel()
	dbURL := testenv.DBURL(t)
	env := []string{"DATABASE_URL=" + dbURL, "KUBEBYON_DATA_DIR=" + t.TempDir(), "KUBEBYON_SECRET_KEY=" + strings.Repeat("A", 43) + "="}

	api := startServe(t, env, "--workers=false")
	api.waitReady(t)
	// /metrics is served on the metrics listener only.
	code, _ := httpGet(t, "http://"+api.addr+"/metrics")
	require.Equal(t, http.StatusNotFound, code)
	code, body := httpGet(t, "http://"+api.metricsAddr+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `kubebyon_http_request_duration_seconds_count{code="200",method="GET",route="/readyz"}`)
	buildInfo := `kubebyon_build_info{goversion="` + runtime.Version() + `",version="` + testVersion + `"} 1`
	require.Contains(t, body, buildInfo)

	metricsAddr := freeAddr(t)
	w := exec.Command(binary, "worker", "--metrics-listen", metricsAddr)
	w.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var werr bytes.Buffer
	w.Stderr = &werr
	require.NoError(t, w.Start())
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })

	// The worker's leader runs the periodic cleanup job at start; its
	// metrics show it was worked there.
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err == nil {
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			if strings.Contains(b.String(), `kubebyon_river_jobs_worked_total{kind="cleanup",outcome="completed"} 1`) {
				require.Contains(t, b.String(), buildInfo, "the worker's metrics say its build too")
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "the worker did not run the cleanup job: %s", werr.String())
		time.Sleep(200 * time.Millisecond)
	}
	// The worker, and it alone, keeps a process row, under its River
	// client's ID: the leader's.
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	var id, leader string
	var pid, n int
	var queues []string
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM worker_processes`).Scan(&n))
	require.Equal(t, 1, n, "serve --workers=false runs no workers")
	require.NoError(t, pool.QueryRow(ctx, `SELECT id, pid, queues FROM worker_processes`).Scan(&id, &pid, &queues))
	require.Equal(t, w.Process.Pid, pid)
	require.Equal(t, []string{"checks", "clusters", "default", "email", "webhook"}, queues)
	require.NoError(t, pool.QueryRow(ctx, `SELECT leader_id FROM river_leader`).Scan(&leader))
	require.Equal(t, leader, id)

	require.NoError(t, w.Process.Signal(syscall.SIGTERM))
	require.NoError(t, w.Wait(), werr.String())
	var stopped bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT stopped_at IS NOT NULL FROM worker_processes WHERE id = $1`, id).Scan(&stopped))
	require.True(t, stopped, "a clean shutdown marks the row stopped")
	api.stop(t)
}

// TestBadConfiguration checks that bad settings stop the program at once,
// with exit status 1 and one line that names the setting.
func TestBadConfiguration(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { busy.Close() })
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))

	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unparseable DATABASE_URL", []string{"DATABASE_URL=postgres://u@host:notaport/db"}, []string{"serve"}, "DATABASE_URL (--database-url) cannot be parsed"},
		{"unwritable data dir", []string{"KUBEBYON_DATA_DIR=" + filepath.Join(file, "data")}, []string{"serve"}, "KUBEBYON_DATA_DIR (--data-dir)"},
		{"port in use", nil, []string{"serve", "--listen", busy.Addr().String()}, "cannot listen on " + busy.Addr().String() + " (KUBEBYON_LISTEN or --listen): address already in use"},
		{"metrics port in use", nil, []string{"serve", "--listen", freeAddr(t), "--metrics-listen", busy.Addr().String()}, "cannot listen on " + busy.Addr().String() + " (KUBEBYON_METRICS_LISTEN or --metrics-listen): address already in use"},
		{"bad listen address", []string{"KUBEBYON_LISTEN=8080"}, []string{"serve"}, "KUBEBYON_LISTEN (--listen) is \"8080\""},
		{"bad base URL", []string{"KUBEBYON_BASE_URL=kubebyon.example.com"}, []string{"serve"}, "KUBEBYON_BASE_URL (--base-url)"},
		{"bad log level", []string{"KUBEBYON_LOG_LEVEL=loud"}, []string{"migrate"}, "KUBEBYON_LOG_LEVEL (--log-level) is \"loud\": use debug, info, warn or error"},
		{"bad log format", nil, []string{"worker", "--log-format", "xml"}, "KUBEBYON_LOG_FORMAT (--log-format) is \"xml\""},
		{"bad secret key", []string{"KUBEBYON_SECRET_KEY=short"}, []string{"serve"}, "KUBEBYON_SECRET_KEY (--secret-key): want the base64 encoding of 32 random bytes"},
		{"bad workers flag", []string{"KUBEBYON_WORKERS=maybe"}, []string{"serve"}, "KUBEBYON_WORKERS (--workers) is \"maybe\""},
		{"bad edge mode", []string{"KUBEBYON_EDGE=sidecar"}, []string{"serve"}, "KUBEBYON_EDGE (--edge) is \"sidecar\": use embedded"},
		{"embedded edge without HAProxy", []string{"KUBEBYON_EDGE=embedded", "KUBEBYON_EDGE_HAPROXY=/no/such/haproxy"}, []string{"serve"}, "install HAProxy"},
		{"cluster step too short", []string{"KUBEBYON_CLUSTER_STEP_TIMEOUT=1s"}, []string{"worker"}, "KUBEBYON_CLUSTER_STEP_TIMEOUT (--cluster-step-timeout) is \"1s\": use a duration from 10s to 1h0m0s"},
		{"bad cluster step", nil, []string{"serve", "--cluster-step-timeout", "soon"}, "KUBEBYON_CLUSTER_STEP_TIMEOUT (--cluster-step-timeout) is \"soon\""},
		{"bad admin email", nil, []string{"admin", "create", "--email", "not-an-email"}, "--email \"not-an-email\" is not an email address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"KUBEBYON_DATA_DIR=" + t.TempDir()}, tt.env...)
			r := kubebyon(t, env, "", tt.args...)
			require.Equal(t, 1, r.code, "stdout %q stderr %q", r.stdout, r.stderr)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			require.Len(t, lines, 1, "want one line, got: %s", r.stderr)
			require.Contains(t, lines[0], tt.want)
		})
	}
}

func TestVersionAndUsage(t *testing.T) {
	t.Parallel()
	r := kubebyon(t, nil, "", "version")
	require.Equal(t, 0, r.code)
	require.True(t, strings.HasPrefix(r.stdout, "kubebyon "+testVersion+" ("+runtime.Version()+" "), r.stdout)

	r = kubebyon(t, nil, "", "frobnicate")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `unknown command "frobnicate"`)
	require.Contains(t, r.stderr, "Commands:")

	r = kubebyon(t, nil, "", "admin")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "kubebyon admin create")

	// The client commands are internal/cli's, listed with the others.
	r = kubebyon(t, nil, "", "help")
	require.Contains(t, r.stdout, "clusters    list, get, create")
	r = kubebyon(t, nil, "", "clusters", "list")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "run kubebyon login")
	r = kubebyon(t, nil, "", "clusters", "delete", "shop")
	require.Equal(t, 2, r.code, "no --yes")
	r = kubebyon(t, nil, "", "completion", "bash")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "__start_kubebyon")
	// What the completion scripts run.
	r = kubebyon(t, nil, "", "__complete", "clusters", "")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "kubeconfig")
}

// httpGet fetches url and returns the status and body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b.String()
}

// waitFor polls cond every 50 ms until it holds, failing after a minute or
// when serve exits.
func (s *server) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("serve exited (%v) waiting for %s: %s", err, what, s.stderr)
		default:
		}
		require.True(t, time.Now().Before(deadline), "waiting for %s: %s", what, s.stderr)
		time.Sleep(50 * time.Millisecond)
	}
}

// status is the status code of GET path on serve's public listener, or 0
// when it does not answer.
func (s *server) status(path string) int {
	resp, err := http.Get("http://" + s.addr + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// killEmbeddedPostgres breaks the embedded server's configuration, so that
// it cannot start again until mended, and SIGKILLs its postmaster. It
// returns the postmaster's PID and the original configuration.
func killEmbeddedPostgres(t *testing.T, dataDir string) (int, []byte) {
	t.Helper()
	pgdata := filepath.Join(dataDir, "postgres", "pgdata")
	pid := postmasterPID(t, pgdata)
	conf := filepath.Join(pgdata, "postgresql.conf")
	orig, err := os.ReadFile(conf)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(conf, append(bytes.Clone(orig), "this is not a setting\n"...), 0o600))
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	return pid, orig
}

func postmasterPID(t *testing.T, pgdata string) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.SplitN(string(raw), "\n", 2)[0])
	require.NoError(t, err)
	return pid
}

// TestServeRestartsEmbeddedPostgres kills the embedded PostgreSQL's
// postmaster under a running serve: /healthz says unhealthy while it is
// down, serve restarts it with backoff and says so, and the platform is
// ready again on the same data.
func TestServeRestartsEmbeddedPostgres(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startServe(t, []string{"KUBEBYON_DATA_DIR=" + dataDir}, "--migrate")
	s.waitReady(t)
	require.Equal(t, http.StatusOK, s.status("/healthz"))

	// The first restart fails on the broken configuration, which keeps the
	// server down long enough to look at it; mended, the next one works.
	old, conf := killEmbeddedPostgres(t, dataDir)
	s.waitFor(t, "a failed restart", func() bool { return strings.Contains(s.stderr.String(), "embedded PostgreSQL did not restart") })
	require.Contains(t, s.stderr.String(), "embedded PostgreSQL exited; restarting it")
	require.Equal(t, http.StatusServiceUnavailable, s.status("/healthz"), "healthy while its database is down")
	require.Equal(t, http.StatusServiceUnavailable, s.status("/readyz"))
	require.NoError(t, os.WriteFile(filepath.Join(dataDir, "postgres", "pgdata", "postgresql.conf"), conf, 0o600))

	s.waitFor(t, "ready again", func() bool { return s.status("/readyz") == http.StatusOK })
	// The database answers a moment before the watcher has finished the
	// restart (a new pool), which is when liveness turns back to healthy.
	s.waitFor(t, "healthy again", func() bool { return s.status("/healthz") == http.StatusOK })
	require.Contains(t, s.stderr.String(), "embedded PostgreSQL restarted")
	require.NotEqual(t, old, postmasterPID(t, filepath.Join(dataDir, "postgres", "pgdata")))
	s.stop(t)
}

// TestServeExitsWhenEmbeddedPostgresStaysDown: a PostgreSQL that cannot
// start again makes serve exit non-zero after its attempts, for a
// supervisor to restart the container, rather than run on without it.
func TestServeExitsWhenEmbeddedPostgresStaysDown(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startServe(t, []string{"KUBEBYON_DATA_DIR=" + dataDir}, "--migrate")
	s.waitReady(t)

	killEmbeddedPostgres(t, dataDir)
	s.waitFor(t, "unhealthy", func() bool { return s.status("/healthz") == http.StatusServiceUnavailable })
	select {
	case err := <-s.done:
		s.done <- err
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		require.Equal(t, 1, exit.ExitCode())
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve did not exit with its PostgreSQL gone: %s", s.stderr)
	}
	require.Contains(t, s.stderr.String(), "kubebyon serve: embedded PostgreSQL exited and did not restart")
}
