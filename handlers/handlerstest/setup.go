package handlerstest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/internal/adminjobs"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/mail"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/services"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
)

// testMailFrom is the platform's sender in the tests (KUBEBYON_MAIL_FROM).
const testMailFrom = "KubeBYON <noreply@kubebyon.test>"

type Bundle struct {
	Pool   *pgxpool.Pool
	Server *httptest.Server
	Mail   *testenv.Mailpit
	Box    *secrets.Box
	// river works the default and email queues (node jobs among them).
	River *river.Client[pgx.Tx]
	// HostKubeconfig is the clusters service's KUBEBYON_KUBECONFIG: no
	// file until ConnectHost writes one.
	HostKubeconfig string
	// metrics is the handlers' metrics service; MetricsVM the base URL of
	// the VictoriaMetrics it keeps the samples in (SetupMetrics), or "".
	metrics   *metrics.Service
	MetricsVM string
}

// Setup serves the real handlers on a database of the test's own, with
// River working jobs and mail going to mailpit. opts change the handlers'
// dependencies before they start.
func Setup(t *testing.T, opts ...func(*handlers.Deps)) *Bundle {
	t.Helper()
	pool := testenv.DB(t)
	mp := testenv.Mail(t)
	catalog, err := locale.New()
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
	rc, err := jobs.NewClient(jobs.Deps{
		Pool: pool, Logger: logger, Metrics: reg, Box: box, Catalog: catalog, BaseURL: baseURL,
		VirtualConfig: workers.Virtual, JoinTokens: workers.JoinTokens, Billing: workers.Billing,
		Webhooks: workers.Webhooks, ClusterMetrics: workers.Metrics, DNS: workers.DNS, Ingress: workers.Ingress,
		Mailer: workers.Mail,
	}, pageTestJobOptions())
	require.NoError(t, err)
	workers.SetRiver(rc)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, rc.Start(ctx))
	t.Cleanup(func() {
		cancel()
		_ = rc.Stop(context.Background())
	})

	web := singleConnPool(t, pool)
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
	t.Cleanup(func() { stopWatching(); <-watched; <-routesWatched })
	deps := handlers.Deps{
		Pool: web, River: rc, Logger: logger, Catalog: catalog,
		BaseURL: baseURL, Metrics: reg, Gatherer: reg,
		Box:            box,
		Accounts:       svc.Accounts,
		Clusters:       svc.Clusters,
		Nodes:          svc.Nodes,
		JoinTokens:     svc.JoinTokens,
		NodeQuota:      svc.NodeQuota,
		APIKeys:        svc.APIKeys,
		AdminUsers:     svc.AdminUsers,
		AdminSettings:  svc.AdminSettings,
		AdminSignUp:    svc.AdminSignUp,
		SignIn:         svc.SignIn,
		Edge:           svc.Edge,
		EdgeState:      edgeState,
		EdgeRoutes:     edgeRoutes,
		DNS:            svc.DNS,
		Billing:        svc.Billing,
		Webhooks:       svc.Webhooks,
		Ingress:        svc.Ingress,
		ClusterMetrics: svc.Metrics,
		AdminJobs:      &adminjobs.Service{Pool: web, River: rc, Periodic: jobs.PeriodicSchedules(pageTestJobOptions())},
		Mail:           svc.Mail,
		Branding:       svc.Branding,
	}
	for _, o := range opts {
		o(&deps)
	}
	srv.Config.Handler = handlers.New(deps)
	// An option that made the base URL https (WithTLS) serves TLS.
	if strings.HasPrefix(deps.BaseURL, "https://") {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return &Bundle{Pool: pool, Server: srv, Mail: mp, Box: box, River: rc, HostKubeconfig: hostKubeconfig, metrics: deps.ClusterMetrics}
}

// singleConnPool is a pool of one connection to pool's database.
func singleConnPool(t *testing.T, pool *pgxpool.Pool) *pgxpool.Pool {
	t.Helper()
	cfg := pool.Config()
	cfg.MaxConns = 1
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
