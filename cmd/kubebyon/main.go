// Command kubebyon is the KubeBYON platform: the web console, API and
// background workers (serve), workers alone (worker), the schema migrator
// (migrate) and the first-admin bootstrap (admin).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/riverqueue/river"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/internal/adminjobs"
	"github.com/kubebyon/kubebyon/internal/certfile"
	client "github.com/kubebyon/kubebyon/internal/cli"
	"github.com/kubebyon/kubebyon/internal/config"
	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/edgeagent"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/mail"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/services"
	"github.com/kubebyon/kubebyon/internal/sessioncache"
	"github.com/kubebyon/kubebyon/internal/webhooks"
	"github.com/kubebyon/kubebyon/internal/workerprocs"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/migrations"
	"github.com/kubebyon/kubebyon/queries"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `Usage: kubebyon <command> [flags]

Commands:
  serve     web console, API and (unless --workers=false) background workers [default]
  worker    background workers only (multi-node mode)
  migrate   apply database migrations, then exit
  admin     create or promote an admin: kubebyon admin create|promote --email EMAIL
  backup    write the database to a file: kubebyon backup --to FILE
  restore   load a backup into an empty database: kubebyon restore --from FILE
  edge      beside HAProxy on an edge machine: keeps it routing every cluster's API host name
  route-agent  on every host node (Linux): keeps its routes to the tenant clusters' Pod networks
  version   print the version

Client commands, for users of the platform's API (docs/users/cli.md):
  login       check an API key and save it: kubebyon login --url URL --api-key KEY
  clusters    list, get, create, delete, wait for clusters; merge a kubeconfig
  tokens      make join tokens: kubebyon tokens create --cluster NAME
  nodes       list, drain, wait for nodes; print a join command
  completion  shell completion: kubebyon completion bash|zsh|fish|powershell

Run 'kubebyon <command> -h' for a command's flags. Every flag can also be set
with the environment variable named in its help.
`

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

// cli is one invocation: its streams and environment.
type cli struct {
	getenv config.Getenv
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func run(args []string, getenv config.Getenv, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	name := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	var err error
	switch name {
	case "login", "clusters", "tokens", "nodes", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
		// The client commands (and the completion scripts' requests) are
		// cobra's, with their own errors and exit codes.
		ctx, stop := signalContext()
		defer stop()
		return client.Run(ctx, append([]string{name}, args...), getenv, stdin, stdout, stderr)
	case "serve":
		err = c.serve(args)
	case "worker":
		err = c.worker(args)
	case "migrate":
		err = c.migrate(args)
	case "admin":
		err = c.admin(args)
	case "backup":
		err = c.backup(args)
	case "restore":
		err = c.restore(args)
	case "edge":
		err = c.edge(args)
	case "route-agent":
		err = c.routeAgent(args)
	case "version":
		fmt.Fprintf(stdout, "kubebyon %s (%s %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "kubebyon: unknown command %q\n\n%s", name, usage)
		return 2
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case err != nil:
		// One line, so that a failed start is easy to read in any log.
		fmt.Fprintf(stderr, "kubebyon %s: %s\n", name, strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	return 0
}

// errUsage marks an error whose message was already printed with the usage.
var errUsage = errors.New("usage")

// parse reads flags for a subcommand; the flag package prints its own errors.
func (c *cli) parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(c.stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(c.stderr, "unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return nil
}

// required is a usage error, printed with fs's usage, when the file flag
// name of fs's subcommand was not given (value is empty).
func (c *cli) required(fs *flag.FlagSet, name, value string) error {
	if value != "" {
		return nil
	}
	fmt.Fprintf(c.stderr, "%s: --%s FILE is required\n", fs.Name(), name)
	fs.Usage()
	return errUsage
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// runtimeDeps are what serve and worker share once the database is open.
type runtimeDeps struct {
	db       *database.DB
	logger   *slog.Logger
	registry *prometheus.Registry
	river    *river.Client[pgx.Tx]
	box      *secrets.Box
	catalog  *locale.Catalog
	// heartbeat keeps this worker process's row (nil without workers).
	heartbeat *workerprocs.Heartbeat
}

// newServices builds the domain services on pool from the configuration
// (services.New): the workers' on the main pool, the handlers' on the web
// pool (database.DB.OpenWeb).
func newServices(pool *pgxpool.Pool, box *secrets.Box, catalog *locale.Catalog, common *config.Common, logger *slog.Logger) *services.Set {
	c := services.Config{
		Pool: pool, Box: box, Logger: logger, Catalog: catalog, BaseURL: common.BaseURL,
		KubeconfigPath: common.Kubeconfig, MetricsBackend: metricsBackend(common), MailFrom: common.MailFrom,
	}
	if common.SMTPURL != "" {
		c.SMTPURL, _ = mail.ParseSMTPURL(common.SMTPURL) // validated with the config
	}
	return services.New(c)
}

// metricsBackend is where the control planes' metrics are kept: the
// Prometheus-compatible database when its URLs are set (both, or neither:
// config.Common.Validate), else PostgreSQL (nil).
func metricsBackend(common *config.Common) metrics.Backend {
	if common.MetricsRemoteWriteURL == "" {
		return nil
	}
	return metrics.Prom{WriteURL: common.MetricsRemoteWriteURL, QueryURL: common.MetricsQueryURL}
}

// start opens the database, checks its schema (applying migrations first
// when asked), and builds the River client.
func (c *cli) start(ctx context.Context, common *config.Common, logger *slog.Logger, migrate, work bool) (*runtimeDeps, error) {
	// client-go logs (a watch that ended with an error, say) through klog;
	// they go to the same log, structured like the rest.
	klog.SetSlogLogger(logger.With("component", "client-go"))
	key, err := common.Key()
	if err != nil {
		return nil, err
	}
	box, err := secrets.New(key)
	if err != nil {
		return nil, err
	}
	catalog, err := locale.New()
	if err != nil {
		return nil, err
	}
	db, err := database.Open(ctx, common, logger)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*runtimeDeps, error) {
		_ = db.Close(context.Background())
		return nil, err
	}
	if migrate {
		res, err := migrations.Up(ctx, db.Pool)
		if err != nil {
			return fail(err)
		}
		if err := stampSchema(ctx, db.Pool, res); err != nil {
			return fail(err)
		}
		logger.Info("migrations applied", "from", res.FromVersion, "to", res.ToVersion, "river", res.RiverApplied)
	}
	if err := migrations.Check(ctx, db.Pool); err != nil {
		return fail(err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), handlers.BuildInfo(version))
	svc := newServices(db.Pool, box, catalog, common, logger)
	if where := svc.Metrics.Store(); where != "" {
		logger.Info("control-plane metrics are kept in a Prometheus-compatible database", "query_url", where)
	}
	if !strings.HasPrefix(common.BaseURL, "https://") {
		logger.Warn("KUBEBYON_BASE_URL is not https: clusters' apiservers cannot call the node quota webhook (Kubernetes calls webhooks only over https), so they do not enforce the plans' node limits; join commands beyond a limit are still refused", "base_url", common.BaseURL)
	}
	if common.SMTPURL == "" {
		logger.Warn("KUBEBYON_SMTP_URL is not set: unless a mail server is set in the admin area (/admin/mail), mail (sign-up codes, password resets) is written to this log instead of being sent")
	}
	opts := jobs.DefaultOptions(work)
	opts.ClusterStepTimeout = common.ClusterStepTimeout
	opts.NodeNotReadyAfter = common.NodeAlertAfter
	opts.RescueStuckJobsAfter = jobs.RescueStuckJobsAfter(common.ClusterStepTimeout)
	// This process's row on the jobs page names its River client.
	proc := workerprocs.NewProcess(version, jobs.WorkedQueues(opts))
	opts.ID = proc.ID
	rc, err := jobs.NewClient(jobs.Deps{
		Pool: db.Pool, Logger: logger, Metrics: reg, Box: box, Catalog: catalog, BaseURL: common.BaseURL,
		KubeconfigPath: common.Kubeconfig, WebhookCABundle: common.WebhookCABundle,
		VirtualConfig: svc.Virtual, JoinTokens: svc.JoinTokens, Billing: svc.Billing, Webhooks: svc.Webhooks,
		ClusterMetrics: svc.Metrics, DNS: svc.DNS, Ingress: svc.Ingress, Mailer: svc.Mail,
	}, opts)
	if err != nil {
		return fail(err)
	}
	svc.SetRiver(rc)
	var beat *workerprocs.Heartbeat
	if work {
		beat = &workerprocs.Heartbeat{Pool: db.Pool, Logger: logger.With("component", "worker_process"), Process: proc}
		if err := beat.Start(ctx); err != nil {
			return fail(err)
		}
		// River hard-stops when its start context ends; shutdown stops it
		// softly instead, in order.
		if err := rc.Start(context.WithoutCancel(ctx)); err != nil {
			_ = beat.Stop(context.Background())
			return fail(fmt.Errorf("start workers: %w", err))
		}
		// The controller pods of the clusters routed through the edge,
		// watched by one worker process at a time.
		pods := &ingress.PodWatch{Pool: db.Pool, Virtual: svc.Virtual, Logger: logger.With("component", "edge_pod_watch")}
		go pods.Run(ctx)
		// The database's own outage, told to the platform's webhook
		// channels from memory (it cannot be queued in the database).
		standby := &webhooks.Standby{
			Queries: queries.New(db.Pool), Ping: db.Pool.Ping, Logger: logger.With("component", "database_standby"),
			Webhooks: svc.Webhooks,
		}
		go standby.Run(ctx)
	}
	return &runtimeDeps{db: db, logger: logger, registry: reg, river: rc, box: box, catalog: catalog, heartbeat: beat}, nil
}

// stop stops the workers (letting running jobs finish for a while), then
// closes the database and stops the embedded PostgreSQL.
func (d *runtimeDeps) stop(work bool) {
	if work {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := d.river.Stop(ctx); err != nil {
			d.logger.Warn("workers did not stop in time; cancelling their jobs", "error", err)
			hard, cancelHard := context.WithTimeout(context.Background(), 10*time.Second)
			_ = d.river.StopAndCancel(hard)
			cancelHard()
		}
		cancel()
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		if err := d.heartbeat.Stop(ctx); err != nil {
			d.logger.Warn("worker process row not marked stopped", "error", err)
		}
		cancel()
	}
	if err := d.db.Close(context.Background()); err != nil {
		d.logger.Error("stop database", "error", err)
	}
}

func (c *cli) serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	common := config.RegisterCommon(fs, c.getenv)
	scfg := config.RegisterServe(fs, c.getenv)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if err := common.Validate(); err != nil {
		return err
	}
	if err := scfg.Validate(); err != nil {
		return err
	}
	// Bind first: a port in use is reported before anything starts.
	ln, err := net.Listen("tcp", scfg.Listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (KUBEBYON_LISTEN or --listen): %w", scfg.Listen, unwrapSyscall(err))
	}
	defer ln.Close()
	var tlsLn net.Listener
	if scfg.TLSCertFile != "" {
		certs, err := certfile.Load(scfg.TLSCertFile, scfg.TLSKeyFile)
		if err != nil {
			return err
		}
		raw, err := net.Listen("tcp", scfg.TLSListen)
		if err != nil {
			return fmt.Errorf("cannot listen on %s (KUBEBYON_TLS_LISTEN or --tls-listen): %w", scfg.TLSListen, unwrapSyscall(err))
		}
		tlsLn = tls.NewListener(raw, &tls.Config{GetCertificate: certs.GetCertificate, MinVersion: tls.VersionTLS12})
		defer tlsLn.Close()
	}
	var metricsLn net.Listener
	if scfg.MetricsListen != "" {
		if metricsLn, err = net.Listen("tcp", scfg.MetricsListen); err != nil {
			return fmt.Errorf("cannot listen on %s (KUBEBYON_METRICS_LISTEN or --metrics-listen): %w", scfg.MetricsListen, unwrapSyscall(err))
		}
		defer metricsLn.Close()
	}

	logger := common.Logger(c.stderr)
	ctx, cancel := signalContext()
	defer cancel()

	deps, err := c.start(ctx, common, logger, scfg.Migrate, scfg.Workers)
	if err != nil {
		return err
	}
	defer deps.stop(scfg.Workers)
	// The handlers' own pool and services on it; the workers keep theirs.
	web, err := deps.db.OpenWeb(ctx)
	if err != nil {
		return err
	}
	svc := newServices(web, deps.box, deps.catalog, common, logger)
	svc.SetRiver(deps.river)
	ctx, dbFailed := watchDatabase(ctx, deps.db)
	// The routes every edge should serve, worked out again when the
	// database says they changed.
	edgeState := edge.NewWatcher(web, deps.box, logger)
	go edgeState.Run(ctx)
	edgeRoutes := edge.NewRoutesWatcher(web, logger)
	go edgeRoutes.Run(ctx)
	// The live pages' streams, told of changes by the database.
	go svc.Live.Run(ctx)
	// The signed-in sessions the pages read, kept a few seconds and
	// forgotten when the database says they changed.
	sessions := sessioncache.New(web, logger, sessioncache.TTL)
	go sessions.Run(ctx)
	ctx, edgeFailed := runEmbeddedEdge(ctx, scfg, common, &edge.Local{State: edgeState, Service: svc.Edge}, logger)

	e := handlers.New(handlers.Deps{
		Pool: web, River: deps.river, Logger: logger, Catalog: deps.catalog,
		BaseURL: common.BaseURL, Metrics: deps.registry, Gatherer: deps.registry,
		Version:        version,
		Alive:          deps.db.Alive,
		TrustedProxies: scfg.TrustedProxies,
		OAuth:          oauthProviders(scfg, common.BaseURL),
		Box:            deps.box,
		SessionCache:   sessions,
		EdgeState:      edgeState,
		EdgeRoutes:     edgeRoutes,
		AdminJobs:      &adminjobs.Service{Pool: web, River: deps.river, Periodic: jobs.PeriodicSchedules(jobs.DefaultOptions(true))},
		Accounts:       svc.Accounts,
		Clusters:       svc.Clusters,
		Nodes:          svc.Nodes,
		JoinTokens:     svc.JoinTokens,
		NodeQuota:      svc.NodeQuota,
		APIKeys:        svc.APIKeys,
		AdminUsers:     svc.AdminUsers,
		AdminOrgs:      svc.AdminOrgs,
		AdminOverview:  svc.AdminOverview,
		AdminSettings:  svc.AdminSettings,
		AdminSignUp:    svc.AdminSignUp,
		SignIn:         svc.SignIn,
		Edge:           svc.Edge,
		DNS:            svc.DNS,
		Ingress:        svc.Ingress,
		Billing:        svc.Billing,
		Webhooks:       svc.Webhooks,
		ClusterMetrics: svc.Metrics,
		Mail:           svc.Mail,
		Branding:       svc.Branding,
		Orgs:           svc.Orgs,
		Live:           svc.Live,
	})
	servers := []endpoint{{newHTTPServer(e, logger), ln}}
	tlsAddr := ""
	if tlsLn != nil {
		servers = append(servers, endpoint{newHTTPServer(e, logger), tlsLn})
		tlsAddr = tlsLn.Addr().String()
	}
	metricsAddr := ""
	if metricsLn != nil {
		probes := handlers.NewProbes(handlers.Deps{Pool: deps.db.Pool, Logger: logger, Gatherer: deps.registry, Alive: deps.db.Alive})
		servers = append(servers, endpoint{newHTTPServer(probes, logger), metricsLn})
		metricsAddr = metricsLn.Addr().String()
	}
	logger.Info("kubebyon serving", "version", version, "listen", ln.Addr().String(), "tls_listen", tlsAddr, "metrics_listen", metricsAddr, "base_url", common.BaseURL, "workers", scfg.Workers)
	if err := serveUntilDone(ctx, logger, servers...); err != nil {
		return err
	}
	return errors.Join(dbFailed(), edgeFailed())
}

// runEmbeddedEdge runs the public entry inside serve when asked
// (KUBEBYON_EDGE=embedded): HAProxy, kept in step from this process. The
// context it returns ends when the edge stops (HAProxy died), so that
// serve exits and its supervisor restarts it; failed waits for the edge
// to stop its HAProxy and says why it ended.
func runEmbeddedEdge(ctx context.Context, scfg *config.Serve, common *config.Common, platform edgeagent.Platform, logger *slog.Logger) (_ context.Context, failed func() error) {
	if scfg.Edge != config.EdgeEmbedded {
		return ctx, func() error { return nil }
	}
	dir := scfg.EdgeDir
	if dir == "" {
		dir = filepath.Join(common.DataDir, "edge")
	}
	agent := &edgeagent.Agent{
		Platform: platform, Name: "embedded", Dir: dir, HAProxy: scfg.EdgeHAProxy,
		APIBind: scfg.EdgeAPIListen, KonnectivityBind: scfg.EdgeKonnectivityListen,
		Logger: logger.With("component", "edge"),
	}
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan error, 1)
	go func() {
		err := agent.Run(ctx)
		if err != nil {
			cancel(fmt.Errorf("embedded edge: %w", err))
		}
		done <- err
	}()
	logger.Info("embedded edge", "dir", dir, "api_listen", scfg.EdgeAPIListen, "konnectivity_listen", scfg.EdgeKonnectivityListen)
	return ctx, func() error { return <-done }
}

// watchDatabase restarts the embedded PostgreSQL whenever it stops. The
// context it returns ends when the server cannot be brought back; failed
// then says why, for the program to exit non-zero and its supervisor to
// restart it.
func watchDatabase(ctx context.Context, db *database.DB) (_ context.Context, failed func() error) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		if err := db.Watch(ctx); err != nil {
			cancel(err)
		}
	}()
	return ctx, func() error {
		if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
}

// oauthProviders are the sign-in providers whose client IDs are set.
func oauthProviders(s *config.Serve, baseURL string) []handlers.OAuthProvider {
	var out []handlers.OAuthProvider
	if s.GitHubClientID != "" {
		app := handlers.OAuthApp{ClientID: s.GitHubClientID, ClientSecret: s.GitHubClientSecret, BaseURL: baseURL}
		out = append(out, handlers.GitHubSignIn(app, handlers.GitHubCom()))
	}
	if s.GoogleClientID != "" {
		app := handlers.OAuthApp{ClientID: s.GoogleClientID, ClientSecret: s.GoogleClientSecret, BaseURL: baseURL}
		out = append(out, handlers.GoogleSignIn(app, handlers.GoogleDiscoveryURL))
	}
	return out
}

func (c *cli) worker(args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	common := config.RegisterCommon(fs, c.getenv)
	wcfg := config.RegisterWorker(fs, c.getenv)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if err := common.Validate(); err != nil {
		return err
	}
	if err := wcfg.Validate(); err != nil {
		return err
	}
	var ln net.Listener
	if wcfg.MetricsListen != "" {
		var err error
		if ln, err = net.Listen("tcp", wcfg.MetricsListen); err != nil {
			return fmt.Errorf("cannot listen on %s (KUBEBYON_WORKER_METRICS_LISTEN or --metrics-listen): %w", wcfg.MetricsListen, unwrapSyscall(err))
		}
		defer ln.Close()
	}

	logger := common.Logger(c.stderr)
	ctx, cancel := signalContext()
	defer cancel()
	deps, err := c.start(ctx, common, logger, false, true)
	if err != nil {
		return err
	}
	defer deps.stop(true)
	ctx, dbFailed := watchDatabase(ctx, deps.db)
	logger.Info("kubebyon worker running", "version", version)

	if ln == nil {
		<-ctx.Done()
		logger.Info("shutting down")
		return dbFailed()
	}
	e := handlers.NewProbes(handlers.Deps{Pool: deps.db.Pool, Logger: logger, Gatherer: deps.registry, Alive: deps.db.Alive})
	if err := serveUntilDone(ctx, logger, endpoint{newHTTPServer(e, logger), ln}); err != nil {
		return err
	}
	return dbFailed()
}

func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// endpoint is an HTTP server and the listener it serves.
type endpoint struct {
	srv *http.Server
	ln  net.Listener
}

// serveUntilDone serves until ctx ends, then drains in-flight requests.
func serveUntilDone(ctx context.Context, logger *slog.Logger, endpoints ...endpoint) error {
	errc := make(chan error, len(endpoints))
	for _, ep := range endpoints {
		go func() { errc <- ep.srv.Serve(ep.ln) }()
	}
	var serveErr error
	select {
	case err := <-errc:
		serveErr = fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	for _, ep := range endpoints {
		if err := ep.srv.Shutdown(shutdownCtx); err != nil && serveErr == nil {
			serveErr = fmt.Errorf("drain requests: %w", err)
		}
	}
	return serveErr
}

func (c *cli) migrate(args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	common := config.RegisterCommon(fs, c.getenv)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if err := common.Validate(); err != nil {
		return err
	}
	logger := common.Logger(c.stderr)
	ctx, cancel := signalContext()
	defer cancel()
	db, err := database.Open(ctx, common, logger)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	res, err := migrations.Up(ctx, db.Pool)
	if err != nil {
		return err
	}
	if err := stampSchema(ctx, db.Pool, res); err != nil {
		return err
	}
	if !res.Changed() {
		fmt.Fprintf(c.stdout, "schema is current (version %d); nothing to apply\n", res.ToVersion)
		return nil
	}
	fmt.Fprintf(c.stdout, "schema migrated from version %d to %d; River migrations applied: %v\n", res.FromVersion, res.ToVersion, res.RiverApplied)
	return nil
}

// unwrapSyscall shortens "listen tcp :8080: bind: address already in use"
// to its cause.
func unwrapSyscall(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		var se *os.SyscallError
		if errors.As(oe.Err, &se) {
			return se.Err
		}
		return oe.Err
	}
	return err
}

// stampSchema records this build as the one that brought the schema to its
// version, when it did, for an older build to name it (migrations.Check).
func stampSchema(ctx context.Context, pool *pgxpool.Pool, res migrations.Result) error {
	if res.ToVersion == res.FromVersion {
		return nil
	}
	return migrations.Stamp(ctx, pool, "kubebyon "+version)
}
