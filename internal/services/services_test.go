package services_test

import (
	"bytes"
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/services"
	"github.com/kubebyon/kubebyon/queries"
)

// TestNew: every service is built on the one pool with the same
// configuration, so that the handlers and the workers cannot differ (the
// web ingress once lacked KUBEBYON_KUBECONFIG); the River client reaches
// every service that enqueues.
func TestNew(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://localhost/none")
	require.NoError(t, err) // not connected: nothing here queries
	t.Cleanup(pool.Close)
	box, err := secrets.New(bytes.Repeat([]byte{1}, 32))
	require.NoError(t, err)
	smtp, err := url.Parse("smtp://mail.example.com:25")
	require.NoError(t, err)
	backend := metrics.Prom{WriteURL: "http://vm/write", QueryURL: "http://vm"}
	s := services.New(services.Config{
		Pool: pool, Box: box, BaseURL: "https://kubebyon.example.com:8443", KubeconfigPath: "/etc/host.kubeconfig",
		MetricsBackend: backend, SMTPURL: smtp, MailFrom: "KubeBYON <noreply@example.com>",
		Passwords: passwords.Hasher{Cost: passwords.TestCost},
	})

	pools := map[string]*pgxpool.Pool{
		"accounts": s.Accounts.Pool, "clusters": s.Clusters.Pool, "nodes": s.Nodes.Pool, "jointokens": s.JoinTokens.Pool,
		"nodequota": s.NodeQuota.Pool, "apikeys": s.APIKeys.Pool, "adminusers": s.AdminUsers.Pool, "adminoverview": s.AdminOverview.Pool,
		"adminsettings": s.AdminSettings.Pool, "adminsignup": s.AdminSignUp.Pool, "signin": s.SignIn.Pool,
		"edge": s.Edge.Pool, "dns": s.DNS.Pool, "ingress": s.Ingress.Pool, "billing": s.Billing.Pool,
		"metrics": s.Metrics.Pool, "webhooks": s.Webhooks.Pool, "mail": s.Mail.Pool, "branding": s.Branding.Pool,
		"orgs": s.Orgs.Pool,
	}
	for name, p := range pools {
		require.Same(t, pool, p, name)
	}
	for name, path := range map[string]string{
		"clusters": s.Clusters.KubeconfigPath, "adminsettings": s.AdminSettings.KubeconfigPath,
		"dns": s.DNS.KubeconfigPath, "ingress": s.Ingress.KubeconfigPath,
	} {
		require.Equal(t, "/etc/host.kubeconfig", path, name)
	}
	require.Equal(t, "kubebyon.example.com", s.Ingress.PlatformHost)
	require.Same(t, s.DNS, s.Ingress.DNS)
	require.Same(t, s.Clusters, s.Nodes.Clusters)
	require.Equal(t, backend, s.Metrics.Backend)
	require.Equal(t, smtp, s.Mail.EnvURL)
	require.Equal(t, "KubeBYON <noreply@example.com>", s.Mail.From)
	require.Same(t, passwords.TestCost, s.Accounts.Passwords.Cost)
	require.Equal(t, "https://kubebyon.example.com:8443", s.Webhooks.BaseURL)

	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	s.SetRiver(rc)
	for name, got := range map[string]*river.Client[pgx.Tx]{
		"accounts": s.Accounts.River, "clusters": s.Clusters.River, "nodes": s.Nodes.River,
		"ingress": s.Ingress.River, "billing": s.Billing.River, "adminsignup": s.AdminSignUp.River,
	} {
		require.Same(t, rc, got, name)
	}
}

// TestVirtual: the services reach a ready cluster's control plane through
// the clusters service, unless the configuration names a stand-in (the
// benchmarks), and then all of them do.
func TestVirtual(t *testing.T) {
	t.Parallel()
	standIn := func(context.Context, queries.Cluster) (*rest.Config, error) {
		return &rest.Config{Host: "https://stand-in"}, nil
	}
	s := services.New(services.Config{Virtual: standIn})
	for name, v := range map[string]func(context.Context, queries.Cluster) (*rest.Config, error){
		"set": s.Virtual, "jointokens": s.JoinTokens.Virtual, "ingress": s.Ingress.Virtual,
	} {
		cfg, err := v(context.Background(), queries.Cluster{})
		require.NoError(t, err, name)
		require.Equal(t, "https://stand-in", cfg.Host, name)
	}

	s = services.New(services.Config{})
	require.NotNil(t, s.Virtual)
	require.Empty(t, s.Ingress.PlatformHost, "no base URL")
}
