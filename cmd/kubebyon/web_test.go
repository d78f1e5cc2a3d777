package main_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// web is a browser on a running serve: it keeps cookies and does not follow
// redirects.
type web struct {
	t    *testing.T
	base string
	http *http.Client
}

func newWeb(t *testing.T, s *server) *web {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &web{t: t, base: "http://" + s.addr, http: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (w *web) do(req *http.Request) (*http.Response, string) {
	w.t.Helper()
	resp, err := w.http.Do(req)
	require.NoError(w.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(w.t, err)
	return resp, string(b)
}

func (w *web) get(path string) (int, string) {
	w.t.Helper()
	req, err := http.NewRequest(http.MethodGet, w.base+path, nil)
	require.NoError(w.t, err)
	resp, body := w.do(req)
	return resp.StatusCode, body
}

var pageCSRF = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// post submits form from page, with page's CSRF token.
func (w *web) post(page, path string, form url.Values) (*http.Response, string) {
	w.t.Helper()
	_, body := w.get(page)
	m := pageCSRF.FindStringSubmatch(body)
	require.NotNil(w.t, m, "no CSRF token on %s", page)
	form.Set("_csrf", m[1])
	req, err := http.NewRequest(http.MethodPost, w.base+path, strings.NewReader(form.Encode()))
	require.NoError(w.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return w.do(req)
}

// signIn signs in with a password and fails the test unless it worked.
func (w *web) signIn(email, password string) {
	w.t.Helper()
	resp, body := w.post("/login", "/login", url.Values{"email": {email}, "password": {password}})
	require.Equal(w.t, http.StatusSeeOther, resp.StatusCode, "sign-in as %s: %s", email, body)
	require.NotContains(w.t, resp.Header.Get("Location"), "/login")
}
