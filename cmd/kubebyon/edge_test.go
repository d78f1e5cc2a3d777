package main_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

var edgeTokenLine = regexp.MustCompile(`(?m)^kbe_[a-z2-7]{8}_[a-z2-7]{32}$`)

// TestAdminEdgeToken checks that 'admin edge-token' prints a new edge token
// once, stores only its hash, audits it as the CLI, and wants a name.
func TestAdminEdgeToken(t *testing.T) {
	t.Parallel()
	dbURL := testenv.DBURL(t)
	env := []string{"DATABASE_URL=" + dbURL, "KUBEBYON_DATA_DIR=" + t.TempDir()}
	r := kubebyon(t, env, "", "admin", "edge-token", "--name", "edge-1")
	require.Equal(t, 0, r.code, r.stderr)
	token := edgeTokenLine.FindString(r.stdout)
	require.NotEmpty(t, token, r.stdout)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	var name, prefix, hash, actor string
	require.NoError(t, conn.QueryRow(ctx, `SELECT t.name, t.prefix, t.secret_hash, a.actor_email FROM edge_tokens t
		JOIN audit_events a ON a.action = 'edge_token.create' AND a.target_id = t.id::text`).Scan(&name, &prefix, &hash, &actor))
	require.Equal(t, "edge-1", name)
	require.Equal(t, token[:12], prefix)
	require.NotContains(t, hash, token[13:])
	require.Equal(t, "cli", actor)

	r = kubebyon(t, env, "", "admin", "edge-token", "--name", " ")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "give the token a name")
}

// TestEdgeCommandSettings checks that 'kubebyon edge' says what is missing
// before it starts anything.
func TestEdgeCommandSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		env  []string
		want string
	}{
		{"no platform", []string{"KUBEBYON_EDGE_DIR=" + dir}, "KUBEBYON_EDGE_PLATFORM_URL"},
		{"no token", []string{"KUBEBYON_EDGE_DIR=" + dir, "KUBEBYON_EDGE_PLATFORM_URL=https://kubebyon.example.com"}, "no edge token"},
		{"no haproxy", []string{"KUBEBYON_EDGE_DIR=" + dir, "KUBEBYON_EDGE_PLATFORM_URL=https://kubebyon.example.com",
			"KUBEBYON_EDGE_TOKEN=kbe_abcdefgh_abcdefghijklmnopqrstuvwxyz234567", "KUBEBYON_EDGE_HAPROXY=/no/such/haproxy"}, "install HAProxy"},
		{"bad listen", []string{"KUBEBYON_EDGE_DIR=" + dir, "KUBEBYON_EDGE_PLATFORM_URL=https://kubebyon.example.com",
			"KUBEBYON_EDGE_TOKEN=kbe_abcdefgh_abcdefghijklmnopqrstuvwxyz234567", "KUBEBYON_EDGE_API_LISTEN=443"}, "KUBEBYON_EDGE_API_LISTEN"},
	} {
		r := kubebyon(t, tt.env, "", "edge")
		require.Equal(t, 1, r.code, tt.name)
		require.Contains(t, r.stderr, tt.want, tt.name)
	}
}

// TestServeWithEmbeddedEdge is the single container's edge: serve with
// KUBEBYON_EDGE=embedded runs HAProxy on the edge listeners, keeps it in
// step (the instance "embedded" reports the desired version, without a
// token), and stops it with itself.
func TestServeWithEmbeddedEdge(t *testing.T) {
	t.Parallel()
	dbURL := testenv.DBURL(t)
	apiListen := freeAddr(t)
	env := []string{
		"DATABASE_URL=" + dbURL, "KUBEBYON_DATA_DIR=" + t.TempDir(), "KUBEBYON_SECRET_KEY=" + strings.Repeat("A", 43) + "=",
		"KUBEBYON_EDGE=embedded", "KUBEBYON_EDGE_HAPROXY=" + testenv.HAProxy(t),
		"KUBEBYON_EDGE_API_LISTEN=" + apiListen, "KUBEBYON_EDGE_KONNECTIVITY_LISTEN=" + freeAddr(t),
	}
	s := startServe(t, env, "--workers=false")
	s.waitReady(t)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	var applied string
	var tokenless bool
	require.Eventually(t, func() bool {
		err := conn.QueryRow(ctx, "SELECT applied_version, token_id IS NULL FROM edge_instances WHERE name = 'embedded'").Scan(&applied, &tokenless)
		return err == nil && applied != ""
	}, 60*time.Second, 200*time.Millisecond, "the embedded edge reports: %s", s.stderr)
	require.True(t, tokenless)
	c, err := net.Dial("tcp", apiListen)
	require.NoError(t, err, "HAProxy listens")
	c.Close()

	s.stop(t)
	_, err = net.Dial("tcp", apiListen)
	require.Error(t, err, "HAProxy stopped with serve")
	// A normal stop is no error: HAProxy's own lines come through the
	// log at their level, the worker's end by our SIGTERM at INFO.
	require.Contains(t, s.stderr.String(), `level=INFO msg="Current worker`)
	require.NotContains(t, s.stderr.String(), "level=ERROR")
	require.NotContains(t, s.stderr.String(), "[ALERT]")
}

// writeServerCert writes a certificate of its own for host, and its key,
// as PEM files, and returns their paths and a pool that trusts it.
func writeServerCert(t *testing.T, host string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	cert, roots := testenv.SelfSignedServer(t, host)
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600))
	return certFile, keyFile, roots
}

// TestConsoleThroughEmbeddedEdge: with a certificate, serve also serves
// HTTPS; once the admin names the console's host and that HTTPS server in
// the settings, the embedded edge passes TLS for the console's name on
// its API port through to it (the console's certificate, verified), while
// other names stay refused.
func TestConsoleThroughEmbeddedEdge(t *testing.T) {
	t.Parallel()
	dbURL := testenv.DBURL(t)
	apiListen, tlsListen := freeAddr(t), freeAddr(t)
	certFile, keyFile, roots := writeServerCert(t, "console.example.test")
	env := []string{
		"DATABASE_URL=" + dbURL, "KUBEBYON_DATA_DIR=" + t.TempDir(), "KUBEBYON_SECRET_KEY=" + strings.Repeat("A", 43) + "=",
		"KUBEBYON_EDGE=embedded", "KUBEBYON_EDGE_HAPROXY=" + testenv.HAProxy(t),
		"KUBEBYON_EDGE_API_LISTEN=" + apiListen, "KUBEBYON_EDGE_KONNECTIVITY_LISTEN=" + freeAddr(t),
		"KUBEBYON_TLS_CERT_FILE=" + certFile, "KUBEBYON_TLS_KEY_FILE=" + keyFile, "KUBEBYON_TLS_LISTEN=" + tlsListen,
	}
	s := startServe(t, env, "--workers=false")
	s.waitReady(t)

	get := func(addr, host string) (int, error) {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: host},
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			},
		}}
		resp, err := client.Get("https://" + host + "/healthz")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	code, err := get(tlsListen, "console.example.test")
	require.NoError(t, err, "serve serves HTTPS itself")
	require.Equal(t, http.StatusOK, code)
	_, err = get(apiListen, "console.example.test")
	require.Error(t, err, "not routed before the admin asks")

	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	box, err := secrets.New(make([]byte, 32))
	require.NoError(t, err)
	rt := settings.Defaults()
	rt.ConsoleHost, rt.ConsoleBackend = "console.example.test", tlsListen
	require.NoError(t, settings.Save(ctx, queries.New(pool), box, rt))
	require.Eventually(t, func() bool {
		code, err := get(apiListen, "console.example.test")
		return err == nil && code == http.StatusOK
	}, 30*time.Second, 200*time.Millisecond, "the console through the edge: %s", s.stderr)
	_, err = get(apiListen, "other.example.test")
	require.Error(t, err, "other names are refused")
}
