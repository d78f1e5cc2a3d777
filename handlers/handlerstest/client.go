package handlerstest

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Client is a cookie-keeping HTTP client that does not follow redirects,
// playing a browser without JavaScript.
type Client struct {
	t    *testing.T
	HTTP *http.Client
	Base string
}

// Client is a new client of the platform, with cookies of its own.
func (b *Bundle) Client(t *testing.T) *Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &Client{t: t, Base: b.Server.URL, HTTP: &http.Client{
		// The server's own client trusts its test certificate under TLS.
		Transport:     b.Server.Client().Transport,
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// CSRFField finds a page's CSRF token.
var CSRFField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// Get fetches a page and returns its status and body.
func (c *Client) Get(path string) (int, string) {
	c.t.Helper()
	resp, err := c.HTTP.Get(c.Base + path)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp.StatusCode, string(body)
}

// CSRF loads a page to get a CSRF token, as a browser would.
func (c *Client) CSRF(path string) string {
	c.t.Helper()
	_, body := c.Get(path)
	m := CSRFField.FindStringSubmatch(body)
	require.NotNil(c.t, m, "no CSRF token on %s", path)
	return m[1]
}

// Post submits a form with the CSRF token of the page it is on.
func (c *Client) Post(page, path string, form url.Values) *http.Response {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("_csrf", c.CSRF(page))
	resp, err := c.HTTP.PostForm(c.Base+path, form)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// ReadBody reads a response's body.
func ReadBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// PostMultipart submits fields and, when filename is set, a file as
// field "logo", with the CSRF token of page.
func (c *Client) PostMultipart(page, path string, fields url.Values, filename string, data []byte) *http.Response {
	c.t.Helper()
	field := ""
	if filename != "" {
		field = "logo"
	}
	return c.postFile(page, path, fields, field, filename, data)
}

// postFile posts a multipart form of fields and, when field is set, a
// file in it, with the CSRF token of page.
func (c *Client) postFile(page, path string, fields url.Values, field, filename string, data []byte) *http.Response {
	c.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	require.NoError(c.t, w.WriteField("_csrf", c.CSRF(page)))
	for k, vs := range fields {
		for _, v := range vs {
			require.NoError(c.t, w.WriteField(k, v))
		}
	}
	if field != "" {
		fw, err := w.CreateFormFile(field, filename)
		require.NoError(c.t, err)
		_, err = fw.Write(data)
		require.NoError(c.t, err)
	}
	require.NoError(c.t, w.Close())
	req, err := http.NewRequest(http.MethodPost, c.Base+path, &body)
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := c.HTTP.Do(req)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// PostSettings submits the settings form as a browser does (multipart,
// with the kubeconfig file when one is given); as htmx when htmx is set.
func (c *Client) PostSettings(path string, form url.Values, kubeconfigFile string, htmx bool) (*http.Response, string) {
	c.t.Helper()
	token := c.CSRF(SettingsPage)
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	require.NoError(c.t, w.WriteField("_csrf", token))
	for k, vs := range form {
		for _, v := range vs {
			require.NoError(c.t, w.WriteField(k, v))
		}
	}
	fw, err := w.CreateFormFile("hostKubeconfigFile", "kubeconfig.yaml")
	require.NoError(c.t, err)
	_, err = fw.Write([]byte(kubeconfigFile))
	require.NoError(c.t, err)
	require.NoError(c.t, w.Close())
	req, err := http.NewRequest(http.MethodPost, c.Base+path, &body)
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", w.FormDataContentType())
	if htmx {
		req.Header.Set("HX-Request", "true")
		req.Header.Set("X-CSRF-Token", token)
	}
	resp, err := c.HTTP.Do(req)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp, ReadBody(c.t, resp)
}

// SignInThrough goes through a provider as a browser does, following the
// provider's own redirects (its login page, its callback) until it sends
// the browser back to the platform's callback, and returns where that
// callback sends the browser.
func (c *Client) SignInThrough(path, provider string) string {
	c.t.Helper()
	next := c.startAt(path)
	for range 10 {
		if strings.HasPrefix(next.String(), c.Base+"/auth/"+provider+"/callback?") {
			resp, body := c.FetchURL(next.String())
			require.Equal(c.t, http.StatusSeeOther, resp.StatusCode, body)
			return resp.Header.Get("Location")
		}
		resp, body := c.FetchURL(next.String())
		require.Contains(c.t, []int{http.StatusFound, http.StatusSeeOther}, resp.StatusCode, body)
		loc, err := next.Parse(resp.Header.Get("Location"))
		require.NoError(c.t, err)
		next = loc
	}
	c.t.Fatalf("no way back from %s", provider)
	return ""
}

// HTMX fetches path as htmx does, returning the response and its body.
func (c *Client) HTMX(path string) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.Base+path, nil)
	require.NoError(c.t, err)
	req.Header.Set("HX-Request", "true")
	resp, err := c.HTTP.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp, string(body)
}

// PostKeyForm sends the create form as the page shows it: with its CSRF
// token and form id, and the scope write unless form names one.
func (c *Client) PostKeyForm(form url.Values) *http.Response {
	c.t.Helper()
	if !form.Has("scope") {
		form.Set("scope", "write")
	}
	return c.PostShownForm("/settings/api-keys", "/settings/api-keys", form)
}

// PostShownForm sends a form that posts once (a form id in the session)
// as page shows it, with its CSRF token and form id, to path.
func (c *Client) PostShownForm(page, path string, form url.Values) *http.Response {
	c.t.Helper()
	_, body := c.Get(page)
	csrf, id := CSRFField.FindStringSubmatch(body), FormIDField.FindStringSubmatch(body)
	require.NotNil(c.t, csrf, body)
	require.NotNil(c.t, id, body)
	form.Set("_csrf", csrf[1])
	form.Set("form_id", id[1])
	resp, err := c.HTTP.PostForm(c.Base+path, form)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// CreateKey creates a write API key through the settings form and
// returns it.
func (c *Client) CreateKey(name string) string {
	c.t.Helper()
	return c.CreateScopedKey(name, "write")
}

// CreateScopedKey creates an API key of a scope (read, write or admin)
// through the settings form and returns it.
func (c *Client) CreateScopedKey(name, scope string) string {
	c.t.Helper()
	resp := c.PostKeyForm(url.Values{"name": {name}, "expiry": {"never"}, "scope": {scope}})
	body := ReadBody(c.t, resp)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, body)
	require.Equal(c.t, "no-store", resp.Header.Get("Cache-Control"))
	m := NewKeyInPage.FindStringSubmatch(body)
	require.NotNil(c.t, m, "no key on the page: %s", body)
	return m[1]
}

// AcceptLanguage plays a browser set to a language.
type AcceptLanguage struct {
	Lang string
	Next http.RoundTripper
}

// Fetch GETs a path with extra headers.
func (c *Client) Fetch(path string, header http.Header) (*http.Response, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.Base+path, nil)
	require.NoError(c.t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.HTTP.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp, body
}

// CreateCluster submits the create form.
func (c *Client) CreateCluster(form url.Values) *http.Response {
	c.t.Helper()
	return c.Post("/clusters/new", "/clusters", form)
}

// HTMXGet fetches a fragment as htmx does.
func (c *Client) HTMXGet(path string) (int, string) {
	c.t.Helper()
	resp, body := c.HTMX(path)
	return resp.StatusCode, body
}

// FetchURL requests an absolute URL, the platform's or a provider's, with c's
// cookies and without following redirects.
func (c *Client) FetchURL(rawURL string) (*http.Response, string) {
	c.t.Helper()
	resp, err := c.HTTP.Get(rawURL)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp, string(body)
}

// Start begins a sign-in with a provider and returns where the platform
// sends the browser: the provider's authorize URL.
func (c *Client) Start(provider string) *url.URL {
	c.t.Helper()
	return c.startAt("/auth/" + provider)
}

// startAt is start from a given start URL (path and query).
func (c *Client) startAt(path string) *url.URL {
	c.t.Helper()
	resp, _ := c.FetchURL(c.Base + path)
	require.Equal(c.t, http.StatusSeeOther, resp.StatusCode)
	u, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(c.t, err)
	return u
}

// SignInWith goes through a provider as a browser does: to the platform, to
// the provider, back to the platform's callback. It returns where the
// callback sends the browser.
func (c *Client) SignInWith(provider string) string {
	c.t.Helper()
	return c.SignInFrom("/auth/"+provider, provider)
}

// SignInFrom is SignInWith from a given start URL (path and query).
func (c *Client) SignInFrom(path, provider string) string {
	c.t.Helper()
	resp, body := c.FetchURL(c.startAt(path).String())
	require.Equal(c.t, http.StatusFound, resp.StatusCode, body)
	callback := resp.Header.Get("Location")
	require.True(c.t, strings.HasPrefix(callback, c.Base+"/auth/"+provider+"/callback?"), callback)
	resp, body = c.FetchURL(callback)
	require.Equal(c.t, http.StatusSeeOther, resp.StatusCode, body)
	return resp.Header.Get("Location")
}

// SignedIn reports whether the client's session is still signed in.
func (c *Client) SignedIn() bool {
	c.t.Helper()
	code, _ := c.Get("/settings/profile")
	return code == http.StatusOK
}

// Upload posts a multipart form with one file, with the CSRF token of page.
func (c *Client) Upload(page, path, field, filename string, data []byte) *http.Response {
	c.t.Helper()
	return c.postFile(page, path, nil, field, filename, data)
}

// PostHTMX submits a form as htmx does, with the CSRF token of page.
func (c *Client) PostHTMX(page, path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("_csrf", c.CSRF(page))
	req, err := http.NewRequest(http.MethodPost, c.Base+path, strings.NewReader(form.Encode()))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	resp, err := c.HTTP.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp, string(body)
}
