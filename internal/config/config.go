// Package config reads KubeBYON's settings from environment variables and
// command-line flags (a flag wins over its variable) and validates them, with
// messages that name the setting and say how to fix it.
//
// These are the process's start-up settings (listen address, database,
// secret key, SMTP, OAuth). The settings admins change at run time in the
// back office are in package settings (storage) and adminsettings (the
// admin's edit, checked and audited).
package config

import (
	"cmp"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	netmail "net/mail"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/mail"
)

// Common holds the settings every subcommand that touches the database uses.
type Common struct {
	DatabaseURL string
	DataDir     string
	SecretKey   string
	LogLevel    string
	LogFormat   string
	BaseURL     string
	SMTPURL     string
	MailFrom    string
	// Kubeconfig names the host cluster's kubeconfig file; the admin
	// settings page can hold one instead, and in-cluster config is the last
	// resort.
	Kubeconfig string
	// WebhookCAFile names a PEM file of the certificates the virtual
	// apiservers verify the platform with when they call its webhooks;
	// Validate reads it into WebhookCABundle. Empty: their system roots.
	WebhookCAFile   string
	WebhookCABundle []byte
	// MetricsRemoteWriteURL and MetricsQueryURL, both set, keep the
	// control planes' metrics in a Prometheus-compatible database
	// (written with remote write, read with PromQL) instead of
	// PostgreSQL.
	MetricsRemoteWriteURL, MetricsQueryURL string
	// ClusterStepTimeout bounds one attempt of a cluster reconcile in the
	// workers this process runs; a job whose worker died is run again by
	// another worker once that long and a grace have passed.
	ClusterStepTimeout time.Duration
	clusterStepRaw     string
	// NodeAlertAfter is how long a node is NotReady before its owner is
	// told.
	NodeAlertAfter time.Duration
	nodeAlertRaw   string
}

// Serve holds the HTTP server's settings.
type Serve struct {
	Listen  string
	Workers bool
	Migrate bool
	// MetricsListen serves /metrics (with /healthz and /readyz) apart from
	// the public listener; empty turns it off.
	MetricsListen string

	// TrustedProxies are CIDRs of load balancers whose X-Forwarded-For
	// header names the client.
	TrustedProxies []*net.IPNet
	trustedRaw     string

	GitHubClientID     string
	GitHubClientSecret string
	GoogleClientID     string
	GoogleClientSecret string

	// Edge is "embedded" to run the public entry (HAProxy and the edge
	// loop) inside serve, "" not to. Its HAProxy and listeners are those
	// of `kubebyon edge`; its directory defaults to <data dir>/edge.
	Edge                                  string
	EdgeDir, EdgeHAProxy                  string
	EdgeAPIListen, EdgeKonnectivityListen string

	// TLSCertFile and TLSKeyFile, when set, make serve also serve HTTPS
	// on TLSListen: the console's HTTPS server that the edge can pass
	// the console's host name through to.
	TLSCertFile, TLSKeyFile, TLSListen string

	envErrs []error // bad boolean values in the environment
}

// EdgeEmbedded is Serve.Edge for the edge inside serve.
const EdgeEmbedded = "embedded"

// Worker holds the standalone worker's settings.
type Worker struct {
	// MetricsListen serves /healthz, /readyz and /metrics; empty turns it off.
	MetricsListen string
}

// Getenv looks up an environment variable; os.Getenv in production.
type Getenv func(string) string

// setting describes one variable with its flag, for messages.
type setting struct{ env, flag string }

func (s setting) String() string { return fmt.Sprintf("%s (--%s)", s.env, s.flag) }

var (
	settingDatabaseURL   = setting{"DATABASE_URL", "database-url"}
	settingDataDir       = setting{"KUBEBYON_DATA_DIR", "data-dir"}
	settingSecretKey     = setting{"KUBEBYON_SECRET_KEY", "secret-key"}
	settingLogLevel      = setting{"KUBEBYON_LOG_LEVEL", "log-level"}
	settingLogFormat     = setting{"KUBEBYON_LOG_FORMAT", "log-format"}
	settingListen        = setting{"KUBEBYON_LISTEN", "listen"}
	settingBaseURL       = setting{"KUBEBYON_BASE_URL", "base-url"}
	settingWorkers       = setting{"KUBEBYON_WORKERS", "workers"}
	settingMigrate       = setting{"KUBEBYON_MIGRATE", "migrate"}
	settingMetricsListen = setting{"KUBEBYON_WORKER_METRICS_LISTEN", "metrics-listen"}
	settingServeMetrics  = setting{"KUBEBYON_METRICS_LISTEN", "metrics-listen"}
	settingSMTPURL       = setting{"KUBEBYON_SMTP_URL", "smtp-url"}
	settingTrusted       = setting{"KUBEBYON_TRUSTED_PROXIES", "trusted-proxies"}
	settingKubeconfig    = setting{"KUBEBYON_KUBECONFIG", "kubeconfig"}
	settingMailFrom      = setting{"KUBEBYON_MAIL_FROM", "mail-from"}
	settingWebhookCA     = setting{"KUBEBYON_WEBHOOK_CA_FILE", "webhook-ca-file"}
	settingGitHubID      = setting{"KUBEBYON_GITHUB_CLIENT_ID", "github-client-id"}
	settingGitHubSecret  = setting{"KUBEBYON_GITHUB_CLIENT_SECRET", "github-client-secret"}
	settingGoogleID      = setting{"KUBEBYON_GOOGLE_CLIENT_ID", "google-client-id"}
	settingGoogleSecret  = setting{"KUBEBYON_GOOGLE_CLIENT_SECRET", "google-client-secret"}
	settingTLSCert       = setting{"KUBEBYON_TLS_CERT_FILE", "tls-cert-file"}
	settingTLSKey        = setting{"KUBEBYON_TLS_KEY_FILE", "tls-key-file"}
	settingTLSListen     = setting{"KUBEBYON_TLS_LISTEN", "tls-listen"}
	settingMetricsWrite  = setting{"KUBEBYON_METRICS_REMOTE_WRITE_URL", "metrics-remote-write-url"}
	settingMetricsQuery  = setting{"KUBEBYON_METRICS_QUERY_URL", "metrics-query-url"}
	settingClusterStep   = setting{"KUBEBYON_CLUSTER_STEP_TIMEOUT", "cluster-step-timeout"}
	settingNodeAlert     = setting{"KUBEBYON_NODE_ALERT_AFTER", "node-alert-after"}
)

// Defaults, also shown in the README's configuration table.
const (
	DefaultListen        = ":8080"
	DefaultBaseURL       = "http://localhost:8080"
	DefaultDataDir       = "./data"
	DefaultLogLevel      = "info"
	DefaultLogFormat     = "text"
	DefaultMetricsListen = ":9090"
	// DefaultServeMetricsListen keeps serve's metrics on the machine
	// itself: the public listener must not expose them.
	DefaultServeMetricsListen = "127.0.0.1:9090"
	// DefaultTLSListen is where serve serves HTTPS when it has a
	// certificate.
	DefaultTLSListen = ":8444"
	// DefaultClusterStepTimeout is the longest a cluster reconcile step
	// (API calls, a Helm install) may take.
	DefaultClusterStepTimeout = 5 * time.Minute
	// DefaultNodeAlertAfter is how long a node is NotReady before its
	// owner is told: a kubelet restart or a short network cut says nothing.
	DefaultNodeAlertAfter = 5 * time.Minute
)

// Bounds of KUBEBYON_CLUSTER_STEP_TIMEOUT: a Helm install needs seconds,
// and a dead worker's job waits that long for another.
const (
	minClusterStepTimeout = 10 * time.Second
	maxClusterStepTimeout = time.Hour
)

func envOr(getenv Getenv, s setting, def string) string {
	if v := getenv(s.env); v != "" {
		return v
	}
	return def
}

// boolVar registers a bool flag whose default comes from the environment; a
// bad value in the environment is appended to errs for Validate to report.
func boolVar(fs *flag.FlagSet, p *bool, getenv Getenv, s setting, def bool, usage string, errs *[]error) {
	v := def
	if raw := getenv(s.env); raw != "" {
		switch strings.ToLower(raw) {
		case "1", "true", "yes", "on":
			v = true
		case "0", "false", "no", "off":
			v = false
		default:
			*errs = append(*errs, fmt.Errorf("%s is %q: use true or false", s, raw))
		}
	}
	fs.BoolVar(p, s.flag, v, usage+" (env "+s.env+")")
}

// RegisterCommon adds the common flags to fs.
func RegisterCommon(fs *flag.FlagSet, getenv Getenv) *Common {
	c := &Common{}
	fs.StringVar(&c.DatabaseURL, settingDatabaseURL.flag, getenv(settingDatabaseURL.env), "PostgreSQL URL; empty starts an embedded PostgreSQL in the data dir (env DATABASE_URL)")
	fs.StringVar(&c.DataDir, settingDataDir.flag, envOr(getenv, settingDataDir, DefaultDataDir), "directory for the secret key file and the embedded PostgreSQL (env KUBEBYON_DATA_DIR)")
	fs.StringVar(&c.SecretKey, settingSecretKey.flag, getenv(settingSecretKey.env), "base64 of 32 random bytes that encrypts secrets at rest; generated into the data dir when empty (env KUBEBYON_SECRET_KEY)")
	fs.StringVar(&c.LogLevel, settingLogLevel.flag, envOr(getenv, settingLogLevel, DefaultLogLevel), "debug, info, warn or error (env KUBEBYON_LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, settingLogFormat.flag, envOr(getenv, settingLogFormat, DefaultLogFormat), "text or json (env KUBEBYON_LOG_FORMAT)")
	fs.StringVar(&c.BaseURL, settingBaseURL.flag, envOr(getenv, settingBaseURL, DefaultBaseURL), "public URL of the platform, used in links and cookies (env KUBEBYON_BASE_URL)")
	fs.StringVar(&c.SMTPURL, settingSMTPURL.flag, getenv(settingSMTPURL.env), "mail server: smtp://user:password@host:port (STARTTLS when offered; ?tls=none or ?tls=starttls to force) or smtps://...; empty logs mail instead (env KUBEBYON_SMTP_URL)")
	fs.StringVar(&c.Kubeconfig, settingKubeconfig.flag, getenv(settingKubeconfig.env), "kubeconfig file of the host cluster the virtual clusters run on (env KUBEBYON_KUBECONFIG)")
	fs.StringVar(&c.MailFrom, settingMailFrom.flag, getenv(settingMailFrom.env), "sender address of the platform's mail; default noreply@ the base URL's host (env KUBEBYON_MAIL_FROM)")
	fs.StringVar(&c.WebhookCAFile, settingWebhookCA.flag, getenv(settingWebhookCA.env), "PEM file of the CA certificates virtual clusters verify the platform's HTTPS certificate with when calling its webhooks; empty uses their system roots (env KUBEBYON_WEBHOOK_CA_FILE)")
	fs.StringVar(&c.MetricsRemoteWriteURL, settingMetricsWrite.flag, getenv(settingMetricsWrite.env), "Prometheus remote write URL for the control planes' metrics, such as http://victoriametrics:8428/api/v1/write; empty keeps them in PostgreSQL (env KUBEBYON_METRICS_REMOTE_WRITE_URL)")
	fs.StringVar(&c.MetricsQueryURL, settingMetricsQuery.flag, getenv(settingMetricsQuery.env), "Prometheus HTTP API URL the metrics are read from with PromQL, such as http://victoriametrics:8428; set with --metrics-remote-write-url (env KUBEBYON_METRICS_QUERY_URL)")
	fs.StringVar(&c.clusterStepRaw, settingClusterStep.flag, envOr(getenv, settingClusterStep, DefaultClusterStepTimeout.String()), "how long one step of a cluster reconcile may take in this process's workers; a job whose worker died goes to another after this and 30 seconds (env KUBEBYON_CLUSTER_STEP_TIMEOUT)")
	fs.StringVar(&c.nodeAlertRaw, settingNodeAlert.flag, envOr(getenv, settingNodeAlert, DefaultNodeAlertAfter.String()), "how long a node is NotReady before its owner is told, from 10s to 24h (env KUBEBYON_NODE_ALERT_AFTER)")
	return c
}

// RegisterServe adds the serve flags to fs.
func RegisterServe(fs *flag.FlagSet, getenv Getenv) *Serve {
	s := &Serve{}
	fs.StringVar(&s.Listen, settingListen.flag, envOr(getenv, settingListen, DefaultListen), "address the HTTP server listens on (env KUBEBYON_LISTEN)")
	fs.StringVar(&s.trustedRaw, settingTrusted.flag, getenv(settingTrusted.env), "comma-separated CIDRs of proxies whose X-Forwarded-For is trusted (env KUBEBYON_TRUSTED_PROXIES)")
	fs.StringVar(&s.GitHubClientID, settingGitHubID.flag, getenv(settingGitHubID.env), "GitHub OAuth app client ID; sign-in with GitHub is on when set (env KUBEBYON_GITHUB_CLIENT_ID)")
	fs.StringVar(&s.GitHubClientSecret, settingGitHubSecret.flag, getenv(settingGitHubSecret.env), "GitHub OAuth app client secret (env KUBEBYON_GITHUB_CLIENT_SECRET)")
	fs.StringVar(&s.GoogleClientID, settingGoogleID.flag, getenv(settingGoogleID.env), "Google OAuth client ID; sign-in with Google is on when set (env KUBEBYON_GOOGLE_CLIENT_ID)")
	fs.StringVar(&s.GoogleClientSecret, settingGoogleSecret.flag, getenv(settingGoogleSecret.env), "Google OAuth client secret (env KUBEBYON_GOOGLE_CLIENT_SECRET)")
	fs.StringVar(&s.MetricsListen, settingServeMetrics.flag, envOr(getenv, settingServeMetrics, DefaultServeMetricsListen), "address for /metrics (and /healthz, /readyz), apart from the public listener; empty turns it off (env KUBEBYON_METRICS_LISTEN)")
	fs.StringVar(&s.Edge, settingServeEdge.flag, getenv(settingServeEdge.env), "embedded: run the public entry (HAProxy and its edge loop) in this process; empty: an edge runs elsewhere (env KUBEBYON_EDGE)")
	fs.StringVar(&s.EdgeDir, "edge-"+settingEdgeDir.flag, getenv(settingEdgeDir.env), "the embedded edge's directory; empty: <data dir>/edge (env KUBEBYON_EDGE_DIR)")
	fs.StringVar(&s.EdgeHAProxy, "edge-"+settingEdgeHAProxy.flag, envOr(getenv, settingEdgeHAProxy, "haproxy"), "the embedded edge's haproxy binary (env KUBEBYON_EDGE_HAPROXY)")
	fs.StringVar(&s.EdgeAPIListen, "edge-"+settingEdgeAPIListen.flag, envOr(getenv, settingEdgeAPIListen, DefaultEdgeAPIListen), "where the embedded edge takes clusters' API connections (env KUBEBYON_EDGE_API_LISTEN)")
	fs.StringVar(&s.TLSCertFile, settingTLSCert.flag, getenv(settingTLSCert.env), "PEM certificate (chain) for the console's HTTPS listener; re-read when it changes (env KUBEBYON_TLS_CERT_FILE)")
	fs.StringVar(&s.TLSKeyFile, settingTLSKey.flag, getenv(settingTLSKey.env), "PEM private key of --tls-cert-file (env KUBEBYON_TLS_KEY_FILE)")
	fs.StringVar(&s.TLSListen, settingTLSListen.flag, envOr(getenv, settingTLSListen, DefaultTLSListen), "address the HTTPS server listens on, with a certificate (env KUBEBYON_TLS_LISTEN)")
	fs.StringVar(&s.EdgeKonnectivityListen, "edge-"+settingEdgeKonnListen.flag, envOr(getenv, settingEdgeKonnListen, DefaultEdgeKonnectivityListen), "where the embedded edge takes konnectivity connections (env KUBEBYON_EDGE_KONNECTIVITY_LISTEN)")
	boolVar(fs, &s.Workers, getenv, settingWorkers, true, "run the background workers in this process", &s.envErrs)
	boolVar(fs, &s.Migrate, getenv, settingMigrate, false, "apply database migrations before serving", &s.envErrs)
	return s
}

// RegisterWorker adds the worker flags to fs.
func RegisterWorker(fs *flag.FlagSet, getenv Getenv) *Worker {
	w := &Worker{}
	fs.StringVar(&w.MetricsListen, settingMetricsListen.flag, envOr(getenv, settingMetricsListen, DefaultMetricsListen), "address for /healthz, /readyz and /metrics; empty turns it off (env KUBEBYON_WORKER_METRICS_LISTEN)")
	return w
}

// Validate checks the common settings and prepares the data dir.
func (c *Common) Validate() error {
	if err := c.validateLog(); err != nil {
		return err
	}
	if c.DatabaseURL != "" {
		if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
			return fmt.Errorf("%s cannot be parsed: %s; use a URL such as postgres://user:password@host:5432/kubebyon", settingDatabaseURL, firstLine(err))
		}
	}
	if c.SecretKey != "" {
		if _, err := DecodeSecretKey(c.SecretKey); err != nil {
			return fmt.Errorf("%s: %w", settingSecretKey, err)
		}
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("%s is %q: use the public http(s) URL without a path, such as https://kubebyon.example.com", settingBaseURL, c.BaseURL)
	}
	c.BaseURL = strings.TrimSuffix(c.BaseURL, "/")
	if c.SMTPURL != "" {
		if _, err := mail.ParseSMTPURL(c.SMTPURL); err != nil {
			return fmt.Errorf("%s: %w", settingSMTPURL, err)
		}
	}
	if c.Kubeconfig != "" {
		if _, err := os.Stat(c.Kubeconfig); err != nil {
			return fmt.Errorf("%s %q: %w", settingKubeconfig, c.Kubeconfig, unwrapPath(err))
		}
	}
	if c.WebhookCAFile != "" {
		bundle, err := readCertificates(c.WebhookCAFile)
		if err != nil {
			return fmt.Errorf("%s %q: %w", settingWebhookCA, c.WebhookCAFile, err)
		}
		c.WebhookCABundle = bundle
	}
	if err := c.validateMetrics(); err != nil {
		return err
	}
	step, err := time.ParseDuration(cmp.Or(c.clusterStepRaw, DefaultClusterStepTimeout.String()))
	if err != nil || step < minClusterStepTimeout || step > maxClusterStepTimeout {
		return fmt.Errorf("%s is %q: use a duration from %s to %s, such as 5m", settingClusterStep, c.clusterStepRaw, minClusterStepTimeout, maxClusterStepTimeout)
	}
	c.ClusterStepTimeout = step
	alert, err := time.ParseDuration(cmp.Or(c.nodeAlertRaw, DefaultNodeAlertAfter.String()))
	if err != nil || alert < 10*time.Second || alert > 24*time.Hour {
		return fmt.Errorf("%s is %q: use a duration from 10s to 24h, such as 5m", settingNodeAlert, c.nodeAlertRaw)
	}
	c.NodeAlertAfter = alert
	if c.MailFrom == "" {
		c.MailFrom = "KubeBYON <noreply@" + u.Hostname() + ">"
	}
	if _, err := netmail.ParseAddress(c.MailFrom); err != nil {
		return fmt.Errorf("%s is %q: use an address such as KubeBYON <noreply@example.com>", settingMailFrom, c.MailFrom)
	}
	if c.DataDir == "" {
		return fmt.Errorf("%s is empty: name a writable directory", settingDataDir)
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("%s %q: %w", settingDataDir, c.DataDir, err)
	}
	c.DataDir = abs
	if err := checkWritableDir(abs); err != nil {
		if errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("%s %q is not writable by uid %d, which kubebyon runs as%s: give it to that user with 'chown -R %d:%d' on the directory (for a bind mount, on the host, at the host's path of it), or run kubebyon as the directory's owner (docker run --user)",
				settingDataDir, abs, os.Geteuid(), ownerOf(abs), os.Geteuid(), os.Getegid())
		}
		return fmt.Errorf("%s %q is not a writable directory (%s): create it or point the setting elsewhere", settingDataDir, abs, err)
	}
	return nil
}

// ownerOf describes who owns path, for an error message: " (the directory
// is uid 0's, drwxr-xr-x)", or nothing when that cannot be told.
func ownerOf(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (the directory is uid %d's, %s)", st.Uid, fi.Mode())
}

// validateMetrics checks the metrics backend's URLs: both or neither.
func (c *Common) validateMetrics() error {
	if (c.MetricsRemoteWriteURL == "") != (c.MetricsQueryURL == "") {
		return fmt.Errorf("%s and %s go together: set both to keep metrics in a Prometheus-compatible database, or neither to keep them in PostgreSQL", settingMetricsWrite, settingMetricsQuery)
	}
	for _, s := range []struct {
		setting setting
		value   string
	}{{settingMetricsWrite, c.MetricsRemoteWriteURL}, {settingMetricsQuery, c.MetricsQueryURL}} {
		if s.value == "" {
			continue
		}
		u, err := url.Parse(s.value)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s is %q: use an http(s) URL, such as http://victoriametrics:8428", s.setting, s.value)
		}
	}
	return nil
}

// Level returns the parsed log level.
func (c *Common) Level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return l, fmt.Errorf("%s is %q: use debug, info, warn or error", settingLogLevel, c.LogLevel)
	}
	return l, nil
}

// validateLog checks the log level and format.
func (c *Common) validateLog() error {
	if _, err := c.Level(); err != nil {
		return err
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("%s is %q: use text or json", settingLogFormat, c.LogFormat)
	}
	return nil
}

// Logger builds the process logger from the log settings.
func (c *Common) Logger(w io.Writer) *slog.Logger {
	level, _ := c.Level()
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Validate checks the serve settings.
func (s *Serve) Validate() error {
	if len(s.envErrs) > 0 {
		return s.envErrs[0]
	}
	if _, _, err := net.SplitHostPort(s.Listen); err != nil {
		return fmt.Errorf("%s is %q: use host:port or :port, such as :8080", settingListen, s.Listen)
	}
	s.TrustedProxies = nil
	for _, part := range strings.Split(s.trustedRaw, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			if strings.Contains(part, ":") {
				part += "/128"
			} else {
				part += "/32"
			}
		}
		_, n, err := net.ParseCIDR(part)
		if err != nil {
			return fmt.Errorf("%s has %q: use CIDRs such as 10.0.0.0/8, comma-separated", settingTrusted, part)
		}
		s.TrustedProxies = append(s.TrustedProxies, n)
	}
	if (s.TLSCertFile == "") != (s.TLSKeyFile == "") {
		return fmt.Errorf("set both %s and %s, or neither", settingTLSCert, settingTLSKey)
	}
	if s.TLSCertFile != "" {
		if _, _, err := net.SplitHostPort(s.TLSListen); err != nil {
			return fmt.Errorf("%s is %q: use host:port or :port, such as :8444", settingTLSListen, s.TLSListen)
		}
		if _, err := tls.LoadX509KeyPair(s.TLSCertFile, s.TLSKeyFile); err != nil {
			return fmt.Errorf("%s and %s: %w", settingTLSCert, settingTLSKey, err)
		}
	}
	switch s.Edge {
	case "":
	case EdgeEmbedded:
		if err := validateEdgeListens(s.EdgeAPIListen, s.EdgeKonnectivityListen); err != nil {
			return err
		}
		path, err := lookHAProxy(s.EdgeHAProxy)
		if err != nil {
			return err
		}
		s.EdgeHAProxy = path
	default:
		return fmt.Errorf("%s is %q: use %s, or leave it empty", settingServeEdge, s.Edge, EdgeEmbedded)
	}
	if s.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(s.MetricsListen); err != nil {
			return fmt.Errorf("%s is %q: use host:port, :port, or empty to turn it off", settingServeMetrics, s.MetricsListen)
		}
	}
	if (s.GitHubClientID == "") != (s.GitHubClientSecret == "") {
		return fmt.Errorf("set both %s and %s, or neither", settingGitHubID, settingGitHubSecret)
	}
	if (s.GoogleClientID == "") != (s.GoogleClientSecret == "") {
		return fmt.Errorf("set both %s and %s, or neither", settingGoogleID, settingGoogleSecret)
	}
	return nil
}

// Validate checks the worker settings.
func (w *Worker) Validate() error {
	if w.MetricsListen == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(w.MetricsListen); err != nil {
		return fmt.Errorf("%s is %q: use host:port, :port, or empty to turn it off", settingMetricsListen, w.MetricsListen)
	}
	return nil
}

func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return unwrapPath(err)
	}
	f, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return unwrapPath(err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// secretKeyFile is the key's file in the data dir when none is configured.
const secretKeyFile = "secret.key"

// SecretKeyFile is where Key keeps the key it generates when none is
// configured.
func (c *Common) SecretKeyFile() string { return filepath.Join(c.DataDir, secretKeyFile) }

// SecretKeySize is the length of the decoded platform key.
const SecretKeySize = 32

// DecodeSecretKey parses a base64 key of SecretKeySize bytes.
func DecodeSecretKey(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != SecretKeySize {
		return nil, fmt.Errorf("want the base64 encoding of %d random bytes (make one with: head -c %d /dev/urandom | base64)", SecretKeySize, SecretKeySize)
	}
	return b, nil
}

// Key returns the platform secret key: the configured one, else the one in
// the data dir, made there on first use. Replicas that share a database must
// share the key, so multi-node installs set KUBEBYON_SECRET_KEY.
func (c *Common) Key() ([]byte, error) {
	if c.SecretKey != "" {
		return DecodeSecretKey(c.SecretKey)
	}
	path := c.SecretKeyFile()
	raw, err := os.ReadFile(path)
	if err == nil {
		key, err := DecodeSecretKey(string(raw))
		if err != nil {
			return nil, fmt.Errorf("secret key file %s: %w", path, err)
		}
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read secret key file: %w", err)
	}
	key := make([]byte, SecretKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate secret key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create secret key file: %w", err)
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("write secret key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write secret key file: %w", err)
	}
	return key, nil
}

// readCertificates reads a PEM file that must hold only certificates, at
// least one, each of which parses.
func readCertificates(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	n := 0
	for rest := raw; ; n++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("holds a %s block: only CERTIFICATE blocks belong in a CA bundle", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return nil, fmt.Errorf("certificate %d: %w", n+1, err)
		}
	}
	if n == 0 {
		return nil, errors.New("holds no PEM certificate")
	}
	return raw, nil
}

// LoopbackBaseURL reports whether a base URL names this machine only
// (localhost, 127.0.0.0/8, ::1): links and join commands made from it work
// nowhere else.
func LoopbackBaseURL(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
