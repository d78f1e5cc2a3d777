// Package services builds the domain services once, from the platform's
// configuration, for everything that runs them: the web server (cmd
// serve hands them to the handlers), the workers (to jobs), the handler
// tests and the benchmarks. Nothing else constructs a domain service, so
// that the handlers and the workers cannot be wired differently.
package services

import (
	"log/slog"
	"net/url"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/adminorgs"
	"github.com/kubebyon/kubebyon/internal/adminoverview"
	"github.com/kubebyon/kubebyon/internal/adminsettings"
	"github.com/kubebyon/kubebyon/internal/adminsignup"
	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/apikeys"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/branding"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/livefeed"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/mailsettings"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/signinproviders"
	"github.com/kubebyon/kubebyon/internal/webhooks"
)

// Config is what the services are built from.
type Config struct {
	// Pool is the database they run on: the workers' pool, or the web
	// pool of the handlers (database.DB.OpenWeb).
	Pool   *pgxpool.Pool
	Box    *secrets.Box
	Logger *slog.Logger
	// Catalog words the webhooks' messages.
	Catalog *locale.Catalog
	// BaseURL is KUBEBYON_BASE_URL; its host is the platform's own, which
	// the managed ingress keeps out of the users' host names.
	BaseURL string
	// KubeconfigPath is KUBEBYON_KUBECONFIG ("": the admin settings' host
	// kubeconfig, else in-cluster).
	KubeconfigPath string
	// MetricsBackend keeps the control planes' metrics; nil is PostgreSQL.
	MetricsBackend metrics.Backend
	// SMTPURL is KUBEBYON_SMTP_URL, parsed (nil: none); MailFrom is
	// KUBEBYON_MAIL_FROM.
	SMTPURL  *url.URL
	MailFrom string
	// Virtual reaches a ready cluster's control plane; nil is the
	// clusters service's (Clusters.VirtualConfig). Benchmarks point it at
	// a stand-in.
	Virtual clusters.VirtualConfigFunc
	// Passwords hashes new passwords; the zero value at the production
	// cost (the tests set passwords.TestCost).
	Passwords passwords.Hasher
}

// Set is every domain service, built on one pool.
type Set struct {
	// Virtual is how the services reach a ready cluster's control plane
	// (Config.Virtual), for the workers (jobs.Deps.VirtualConfig).
	Virtual clusters.VirtualConfigFunc

	Accounts      *accounts.Service
	Clusters      *clusters.Service
	Nodes         *nodes.Service
	JoinTokens    *jointokens.Service
	NodeQuota     *nodequota.Service
	APIKeys       *apikeys.Service
	AdminUsers    *adminusers.Service
	AdminOrgs     *adminorgs.Service
	AdminOverview *adminoverview.Service
	AdminSettings *adminsettings.Service
	AdminSignUp   *adminsignup.Service
	SignIn        *signinproviders.Service
	Edge          *edge.Service
	DNS           *dnsrecords.Service
	Ingress       *ingress.Service
	Billing       *billing.Service
	Metrics       *metrics.Service
	Webhooks      *webhooks.Service
	// Mail is the mail server settings and the platform's sender: the
	// admin mail settings, else SMTPURL, else the log, chosen at each send.
	Mail     *mailsettings.Service
	Branding *branding.Service
	// Orgs: the organizations and their members.
	Orgs *orgs.Service
	// Live tells the console's live pages that a cluster changed, once
	// its Run listens (serve runs the web set's).
	Live *livefeed.Feed
}

// New builds the services. The services that enqueue jobs get their River
// client from SetRiver: the client's workers need some of these services
// (jobs.Deps), so it is built after them.
func New(c Config) *Set {
	pool, box, kubeconfig := c.Pool, c.Box, c.KubeconfigPath
	cl := &clusters.Service{Pool: pool, Box: box, KubeconfigPath: kubeconfig}
	dns := &dnsrecords.Service{Pool: pool, Box: box, KubeconfigPath: kubeconfig}
	virtual := c.Virtual
	if virtual == nil {
		virtual = cl.VirtualConfig
	}
	return &Set{
		Virtual:       virtual,
		Accounts:      &accounts.Service{Pool: pool, Box: box, Passwords: c.Passwords},
		Clusters:      cl,
		Nodes:         &nodes.Service{Pool: pool, Clusters: cl},
		JoinTokens:    &jointokens.Service{Pool: pool, Box: box, Virtual: virtual},
		NodeQuota:     &nodequota.Service{Pool: pool, Box: box, Clients: nodequota.NewClients(virtual, nodequota.ClientsKept)},
		APIKeys:       &apikeys.Service{Pool: pool},
		AdminUsers:    &adminusers.Service{Pool: pool},
		AdminOrgs:     &adminorgs.Service{Pool: pool},
		AdminOverview: &adminoverview.Service{Pool: pool},
		AdminSettings: &adminsettings.Service{Pool: pool, Box: box, KubeconfigPath: kubeconfig},
		AdminSignUp:   &adminsignup.Service{Pool: pool, Box: box},
		SignIn:        &signinproviders.Service{Pool: pool, Box: box},
		Edge:          &edge.Service{Pool: pool, Box: box},
		DNS:           dns,
		Ingress: &ingress.Service{
			Pool: pool, Box: box, DNS: dns, Virtual: virtual,
			KubeconfigPath: kubeconfig, PlatformHost: urlHost(c.BaseURL),
		},
		Billing:  &billing.Service{Pool: pool, Box: box},
		Metrics:  &metrics.Service{Pool: pool, Backend: c.MetricsBackend},
		Webhooks: &webhooks.Service{Pool: pool, Box: box, Catalog: c.Catalog, BaseURL: c.BaseURL},
		Mail:     &mailsettings.Service{Pool: pool, Box: box, EnvURL: c.SMTPURL, From: c.MailFrom, Logger: c.Logger},
		Branding: &branding.Service{Pool: pool, Logger: c.Logger},
		Orgs:     &orgs.Service{Pool: pool, Box: box},
		Live:     livefeed.New(pool, c.Logger),
	}
}

// SetRiver hands the River client to the services that enqueue jobs.
func (s *Set) SetRiver(rc *river.Client[pgx.Tx]) {
	s.Accounts.River, s.Clusters.River, s.Nodes.River, s.Ingress.River = rc, rc, rc, rc
	s.Billing.River, s.AdminSignUp.River, s.Orgs.River = rc, rc, rc
}

// urlHost is the host of the platform's base URL ("" when it has none:
// config.Common.Validate refuses such a URL before).
func urlHost(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
