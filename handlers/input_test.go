package handlers_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// formFieldNames are the field names the views and handlers use: quoted
// names in templ name="..." attributes and in the handlers' FormValue and
// formFrom calls. New forms bring their names along.
func formFieldNames(t *testing.T) []string {
	t.Helper()
	quoted := regexp.MustCompile(`"([a-zA-Z_][a-zA-Z0-9_]*)"`)
	sources := []struct {
		glob string
		call *regexp.Regexp
	}{
		{"../views/*.templ", regexp.MustCompile(`\bname="[^"]+"`)},
		{"*.go", regexp.MustCompile(`(FormValue|formFrom)\([^)]*\)`)},
	}
	set := map[string]bool{}
	for _, s := range sources {
		files, err := filepath.Glob(s.glob)
		require.NoError(t, err)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, call := range s.call.FindAll(src, -1) {
				for _, m := range quoted.FindAllSubmatch(call, -1) {
					set[string(m[1])] = true
				}
			}
		}
	}
	delete(set, "_csrf")
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	require.Subset(t, names, []string{"email", "name", "password", "description", "code"})
	return names
}

// TestUnstorableInputEveryForm posts a NUL and invalid UTF-8, URL-encoded
// and multipart, into each field of every POST route the server has (as
// an admin, with a valid CSRF token): each is refused with 422 naming the
// field, never a 500 from PostgreSQL refusing the text.
func TestUnstorableInputEveryForm(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, _ := b.signedUpAdmin(t, "unstorable")
	token := c.csrf("/settings/api-keys")
	names := formFieldNames(t)

	var routes []*echo.Route
	for _, r := range b.server.Config.Handler.(*echo.Echo).Routes() {
		if r.Method == http.MethodPost {
			routes = append(routes, r)
		}
	}
	require.GreaterOrEqual(t, len(routes), 40)
	param := regexp.MustCompile(`:[a-zA-Z]+`)
	bad := map[string]string{"nul": "ab\x00cd", "invalid utf-8": "a\xffb@x.test"}

	for _, r := range routes {
		path := param.ReplaceAllString(r.Path, "1")
		for _, name := range names {
			for kind, value := range bad {
				for _, multi := range []bool{false, true} {
					form := url.Values{"_csrf": {token}, name: {value}}
					var body bytes.Buffer
					contentType := "application/x-www-form-urlencoded"
					if multi {
						w := multipart.NewWriter(&body)
						for k, v := range form {
							require.NoError(t, w.WriteField(k, v[0]))
						}
						require.NoError(t, w.Close())
						contentType = w.FormDataContentType()
					} else {
						body.WriteString(form.Encode())
					}
					resp, err := c.http.Post(c.base+path, contentType, &body)
					require.NoError(t, err)
					got := readBody(t, resp)
					where := []any{"%s %s, field %s, %s, multipart %t: %s", r.Method, r.Path, name, kind, multi, got}
					require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, where...)
					switch {
					case strings.HasPrefix(path, "/api/"), strings.HasPrefix(path, "/webhooks/"):
						var e apiErrorJSON
						require.NoError(t, json.Unmarshal([]byte(got), &e), where...)
						require.Equal(t, "Use text without NUL characters or invalid UTF-8.", e.Error.Fields[name], where...)
					case strings.HasPrefix(path, "/join/"):
						require.Contains(t, got, "exit 1", where...)
						require.Contains(t, got, "“"+name+"”", where...)
					default:
						require.Contains(t, got, `data-testid="error-page"`, where...)
						require.Contains(t, got, "“"+name+"”: Use text without NUL characters or invalid UTF-8.", where...)
					}
				}
			}
		}
	}
}

// TestUnstorableInputReported are the requests the report named, and a
// query string: 422, the field named, in the reader's language.
func TestUnstorableInputReported(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, _ := b.signedUpUser(t, "reported")

	resp := c.postKeyForm(url.Values{"name": {"ab\x00cd"}, "expiry": {"never"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), "“name”: Use text without NUL characters or invalid UTF-8.")

	anon := b.client(t)
	resp = anon.post("/login", "/login", url.Values{"email": {"a\xffb@x.test"}, "password": {"x"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), "“email”")

	req, err := http.NewRequest(http.MethodGet, b.server.URL+"/signup/verify?email=a%00b%40x.test", nil)
	require.NoError(t, err)
	req.Header.Set("Accept-Language", "zh-CN")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), "“email”: 请使用不含 NUL 字符或无效 UTF-8 的文本。")
}

// TestRequestTooLargeTranslated: the 413 says so in the reader's language,
// on the error page and in the API's JSON.
func TestRequestTooLargeTranslated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := strings.Repeat("x", 2<<20)
	for _, tc := range []struct {
		path, lang, want string
	}{
		{"/login", "en", "The request is too large"},
		{"/login", "zh-CN", "请求内容过大"},
		{"/api/v1/clusters", "en", `{"error":{"code":"request_entity_too_large","message":"The request is too large"}}`},
		{"/api/v1/clusters", "zh-CN", `{"error":{"code":"request_entity_too_large","message":"请求内容过大"}}`},
	} {
		req, err := http.NewRequest(http.MethodPost, b.server.URL+tc.path, strings.NewReader(big))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept-Language", tc.lang)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body := readBody(t, resp)
		resp.Body.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, tc)
		require.NotContains(t, body, "ErrorRequestTooLarge", tc)
		if strings.HasPrefix(tc.path, "/api/") {
			require.JSONEq(t, tc.want, body, tc)
		} else {
			require.Contains(t, body, `data-testid="error-page"`, tc)
			require.Contains(t, body, "<h1>"+tc.want+"</h1>", tc)
		}
	}
}
