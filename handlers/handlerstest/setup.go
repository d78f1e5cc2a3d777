package handlerstest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/internal/adminjobs"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/livefeed"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/mail"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/services"
	"github.com/kubebyon/kubebyon/internal/sessioncache"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
)

// sharedCatalog is the translations, read once for every Setup of the
// test binary (about 15 ms of CPU each time).
var sharedCatalog = sync.OnceValues(locale.New)

// testMailFrom is the platform's sender in the tests (KUBEBYON_MAIL_FROM).
const testMailFrom = "KubeBYON <noreply@kubebyon.test>"

// Bundle is the platform Setup serves and what the tests reach behind it.
type Bundle struct {
	// Echo is the handlers Server serves, behind the API description's
	// check (APISpec).
	Echo *echo.Echo
	// Pool is the test's database; the handlers use a pool of one
	// connection of their own on it.
	Pool *pgxpool.Pool
	// Server serves the handlers (over TLS with WithTLS).
	Server *httptest.Server
	// Mail is the mailpit the platform sends its mail to.
	Mail *testenv.Mailpit
	// Box is the platform key's encryption, as the services use it.
	Box *secrets.Box
	// River inserts jobs; with SetupWorking it also works the default and
	// email queues (node jobs among them).
	River *river.Client[pgx.Tx]
	// Live is the handlers' live feed (the streams' notifications).
	Live *livefeed.Feed
	// HostKubeconfig is the clusters service's KUBEBYON_KUBECONFIG: no
	// file until ConnectHost writes one.
	HostKubeconfig string
	// Metrics is the handlers' metrics service; MetricsVM the base URL of
	// the VictoriaMetrics it keeps the samples in (SetupMetrics), or "".
	Metrics   *metrics.Service
	MetricsVM string

	// working: River works the queues (SetupWorking); otherwise
	// DeliverMail works the mail jobs with emailWorker.
	working     bool
	emailWorker *jobs.EmailWorker
}

// Setup serves the real handlers on a database of the test's own, with
// mail going to mailpit. Its River client only inserts jobs: the test
// works those it needs (DeliverMail, WorkIngress and the like), so that
// no queue is polled behind it. opts change the handlers' dependencies
// before they start.
func Setup(t *testing.T, opts ...func(*handlers.Deps)) *Bundle {
	t.Helper()
	return setup(t, false, nil, opts)
}

// SetupTraced is Setup with tracer on the pool every service of the
// handlers reads through (the page query counts of TestPageQueries).
func SetupTraced(t *testing.T, tracer pgx.QueryTracer, opts ...func(*handlers.Deps)) *Bundle {
	t.Helper()
	return setup(t, false, tracer, opts)
}

// SetupWorking is Setup with River working the default, email and checks
// queues as the workers would: for tests of what the jobs do on their
// own, once queued.
func SetupWorking(t *testing.T, opts ...func(*handlers.Deps)) *Bundle {
	t.Helper()
	return setup(t, true, nil, opts)
}

func setup(t *testing.T, working bool, tracer pgx.QueryTracer, opts []func(*handlers.Deps)) *Bundle {
	t.Helper()
	pool := testenv.DB(t)
	mp := testenv.Mail(t)
	catalog, err := sharedCatalog()
	require.NoError(t, err)
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	smtpURL, err := mail.ParseSMTPURL(mp.SMTPURL)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	srv := httptest.NewUnstartedServer(nil)
	baseURL := "http://" + srv.Listener.Addr().String()
	hostKubeconfig := filepath.Join(t.TempDir(), "host.kubeconfig")
	// The services, as cmd builds them: the workers' on the test's pool,
	// the handlers' on a web pool of their own (database.ConnectWeb) of a
	// single connection: a handler that waits for a second connection
	// while it holds one hangs every test that reaches it, where a bigger
	// pool would hang only under load. Passwords are hashed cheaply.
	config := services.Config{
		Pool: pool, Box: box, Logger: logger, Catalog: catalog, BaseURL: baseURL,
		KubeconfigPath: hostKubeconfig, SMTPURL: smtpURL, MailFrom: testMailFrom,
		Passwords: passwords.Hasher{Cost: passwords.TestCost},
	}
	workers := services.New(config)
	jobOpts := pageTestJobOptions()
	jobOpts.Work = working
	rc, err := jobs.NewClient(jobs.Deps{
		Pool: pool, Logger: logger, Metrics: reg, Box: box, Catalog: catalog, BaseURL: baseURL,
		VirtualConfig: workers.Virtual, JoinTokens: workers.JoinTokens, Billing: workers.Billing,
		Webhooks: workers.Webhooks, ClusterMetrics: workers.Metrics, DNS: workers.DNS, Ingress: workers.Ingress,
		Mailer: workers.Mail,
	}, jobOpts)
	require.NoError(t, err)
	workers.SetRiver(rc)
	if working {
		ctx, cancel := context.WithCancel(context.Background())
		require.NoError(t, rc.Start(ctx))
		t.Cleanup(func() {
			cancel()
			_ = rc.Stop(context.Background())
		})
	}

	web := singleConnPool(t, pool, tracer)
	config.Pool = web
	svc := services.New(config)
	svc.SetRiver(rc)
	// No KUBEBYON_KUBECONFIG for the admin settings: the host comes from
	// them (ConnectHost stores it), as the admin settings tests expect.
	svc.AdminSettings.KubeconfigPath = ""
	edgeState := edge.NewWatcher(web, box, logger)
	watchCtx, stopWatching := context.WithCancel(context.Background())
	watched := make(chan struct{})
	edgeRoutes := edge.NewRoutesWatcher(web, logger)
	go func() { edgeState.Run(watchCtx); close(watched) }()
	routesWatched := make(chan struct{})
	go func() { edgeRoutes.Run(watchCtx); close(routesWatched) }()
	live := make(chan struct{})
	go func() { svc.Live.Run(watchCtx); close(live) }()
	t.Cleanup(func() { stopWatching(); <-watched; <-routesWatched; <-live })
	deps := Deps(svc, handlers.Deps{
		Pool: web, River: rc, Logger: logger, Catalog: catalog,
		BaseURL: baseURL, Metrics: reg, Gatherer: reg, Box: box,
		EdgeState:  edgeState,
		EdgeRoutes: edgeRoutes,
		// A live page's stream ends soon, as it does after its lifetime
		// in production: a client that reads one whole (the role table)
		// waits no longer; the browser connects again.
		StreamLifetime: testStreamLifetime,
		AdminJobs:      &adminjobs.Service{Pool: web, River: rc, Periodic: jobs.PeriodicSchedules(pageTestJobOptions())},
	})
	for _, o := range opts {
		o(&deps)
	}
	e := handlers.New(deps)
	// Every API request and answer is checked against the description.
	srv.Config.Handler = APISpec(t).Check(t, e)
	// An option that made the base URL https (WithTLS) serves TLS.
	if strings.HasPrefix(deps.BaseURL, "https://") {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return &Bundle{
		Echo: e, Pool: pool, Server: srv, Mail: mp, Box: box, River: rc, Live: svc.Live, HostKubeconfig: hostKubeconfig, Metrics: deps.ClusterMetrics,
		working:     working,
		emailWorker: &jobs.EmailWorker{Pool: pool, Sender: workers.Mail, Box: box, Catalog: catalog, BaseURL: baseURL},
	}
}

// testStreamLifetime is how long a live page's stream lasts in the tests.
const testStreamLifetime = 3 * time.Second

// needWorking fails a test whose helper waits for River to work a job
// when its Bundle comes from Setup, which only inserts.
func (b *Bundle) needWorking(t *testing.T) {
	t.Helper()
	if !b.working {
		t.Fatal("this waits for River to work a job: start the platform with SetupWorking")
	}
}

// Deps is base with the handlers' services taken from set: the one
// mapping of the services to handlers.Deps for the tests and the bench
// (cmd wires its own). base brings the rest: the pool, River, the logger,
// the catalog, the watchers and so on.
func Deps(set *services.Set, base handlers.Deps) handlers.Deps {
	base.Accounts = set.Accounts
	base.Clusters = set.Clusters
	base.Live = set.Live
	base.Nodes = set.Nodes
	base.JoinTokens = set.JoinTokens
	base.NodeQuota = set.NodeQuota
	base.APIKeys = set.APIKeys
	base.AdminUsers = set.AdminUsers
	base.AdminOrgs = set.AdminOrgs
	base.AdminOverview = set.AdminOverview
	base.AdminSettings = set.AdminSettings
	base.AdminSignUp = set.AdminSignUp
	base.SignIn = set.SignIn
	base.Edge = set.Edge
	base.DNS = set.DNS
	base.Billing = set.Billing
	base.Webhooks = set.Webhooks
	base.Ingress = set.Ingress
	base.ClusterMetrics = set.Metrics
	base.Mail = set.Mail
	base.Branding = set.Branding
	base.Orgs = set.Orgs
	return base
}

// singleConnPool is a pool of one connection to pool's database.
func singleConnPool(t *testing.T, pool *pgxpool.Pool, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg := pool.Config()
	cfg.MaxConns = 1
	if tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	web, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(web.Close)
	return web
}

// pageTestJobOptions work mail and maintenance, not cluster jobs: the
// handler tests play the reconcile worker themselves.
func pageTestJobOptions() jobs.Options {
	opts := jobs.DefaultOptions(true)
	opts.WorkQueues = []string{river.QueueDefault, notify.QueueEmail, checks.Queue}
	// No periodic jobs: the tests queue the ones they run.
	opts.ChecksInterval = 0
	opts.SkipPeriodic = true
	return opts
}

// WaitFor polls cond until it holds, failing the test after a minute.
func WaitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WithTLS serves the platform over https, as the apiserver calls webhooks
// only over https.
func WithTLS(d *handlers.Deps) { d.BaseURL = "https://" + strings.TrimPrefix(d.BaseURL, "http://") }

// WithSessionCache gives the handlers a session cache (sessioncache) that
// keeps each session ttl at most, listening on channel (the database
// notifies sessioncache.Channel; another is never notified) until the
// test ends. The other tests read the session on every page: what they
// write straight to the database is on their next page at once.
func WithSessionCache(t *testing.T, ttl time.Duration, channel string) func(*handlers.Deps) {
	return func(d *handlers.Deps) {
		c := sessioncache.New(d.Pool, d.Logger, ttl).OnChannel(channel)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		require.Eventually(t, c.Listening, 10*time.Second, 10*time.Millisecond, "the session cache listens")
		d.SessionCache = c
	}
}
