package handlers_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

func cookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// TestSessionCookie checks the session cookie's flags and that signing in
// gives the browser a new session token.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "cookie")
	_, _ = c.Get("/")
	u, err := url.Parse(b.Server.URL)
	require.NoError(t, err)
	var before string
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if ck.Name == "kubebyon_session" {
			before = ck.Value
		}
	}
	require.NotEmpty(t, before)

	resp := c.Post("/", "/logout", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp = c.Post("/login", "/login", url.Values{"email": {email}, "password": {"password of cookie"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	ck := cookieNamed(resp, "kubebyon_session")
	require.NotNil(t, ck, "signing in sets a session cookie")
	require.NotEqual(t, before, ck.Value, "the token is renewed at sign-in")
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, ck.SameSite)
	require.False(t, ck.Secure, "an http base URL cannot use Secure cookies")
}

// TestHTTPSBaseURL checks that an https base URL turns on HSTS and Secure
// cookies with the __Host- prefix, and that no cookie carries a CSRF token.
func TestHTTPSBaseURL(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	catalog, err := locale.New()
	require.NoError(t, err)
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer(handlers.New(handlers.Deps{
		Pool: pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Catalog: catalog,
		BaseURL: "https://kubebyon.example.com", Metrics: reg, Gatherer: reg, Box: box,
	}))
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL + "/login")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "max-age=31536000; includeSubDomains", resp.Header.Get("Strict-Transport-Security"))
	require.Len(t, resp.Cookies(), 1, "the session cookie only: the CSRF token stays on the server")
	ck := cookieNamed(resp, "__Host-kubebyon_session")
	require.NotNil(t, ck, "the session cookie is __Host- prefixed")
	require.True(t, ck.Secure)
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, ck.SameSite)
	require.Equal(t, "/", ck.Path, "__Host- cookies are for every path")
	require.Empty(t, ck.Domain, "__Host- cookies name no domain")
}
