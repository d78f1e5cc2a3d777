package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestCSRFBoundToSession checks that the CSRF token is the one the server
// keeps in the browser's session: a token an attacker chose and planted as
// a cookie is refused, and the token from before sign-in stops working
// after it.
func TestCSRFBoundToSession(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, email := b.SignedUpUser(t, "csrf")
	u, err := url.Parse(b.Server.URL)
	require.NoError(t, err)

	// An attacker who can set cookies (a sibling domain, a plain-http
	// page) plants the old double-submit cookie and posts its value.
	c := b.Client(t)
	c.CSRF("/login")
	c.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: "kubebyon_csrf", Value: "chosen-by-attacker", Path: "/"}})
	resp, err := c.HTTP.PostForm(b.Server.URL+"/login", url.Values{
		"_csrf": {"chosen-by-attacker"}, "email": {email}, "password": {"password of csrf"},
	})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a token the browser's session does not hold is refused")

	before := c.CSRF("/login")
	resp, err = c.HTTP.PostForm(b.Server.URL+"/login", url.Values{
		"_csrf": {before}, "email": {email}, "password": {"password of csrf"},
	})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	for _, viaHeader := range []bool{false, true} {
		req, err := http.NewRequest(http.MethodPost, b.Server.URL+"/logout", strings.NewReader(url.Values{"_csrf": {before}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if viaHeader {
			req.Header.Set("X-CSRF-Token", before)
			req.Header.Set("HX-Request", "true")
		}
		resp, err = c.HTTP.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "the token from before sign-in is done (header: %v)", viaHeader)
	}
	require.True(t, c.SignedIn())

	// The token of a page after sign-in works, as htmx sends it.
	after := c.CSRF("/")
	require.NotEqual(t, before, after)
	req, err := http.NewRequest(http.MethodPost, b.Server.URL+"/logout", nil)
	require.NoError(t, err)
	req.Header.Set("X-CSRF-Token", after)
	req.Header.Set("HX-Request", "true")
	resp, err = c.HTTP.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "/", resp.Header.Get("HX-Redirect"))
	require.False(t, c.SignedIn())
}

// TestCookiesOverHTTPS checks that under an https base URL every cookie
// the platform sets, the session's and the device's, is __Host- prefixed
// and Secure.
func TestCookiesOverHTTPS(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t, handlerstest.WithTLS)
	c, email := b.SignedUpUser(t, "tls")
	resp := c.Post("/", "/logout", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp = c.Post("/login", "/login", url.Values{"email": {email}, "password": {"password of tls"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	names := map[string]bool{}
	for _, ck := range resp.Cookies() {
		require.True(t, strings.HasPrefix(ck.Name, "__Host-"), ck.Name)
		require.True(t, ck.Secure, ck.Name)
		require.Equal(t, "/", ck.Path, ck.Name)
		require.Empty(t, ck.Domain, ck.Name)
		names[ck.Name] = true
	}
	require.Equal(t, map[string]bool{"__Host-kubebyon_session": true, "__Host-kubebyon_device": true}, names)
}
