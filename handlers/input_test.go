package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
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
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpAdmin(t, "unstorable")
	token := c.CSRF("/settings/api-keys")
	names := formFieldNames(t)

	var routes []*echo.Route
	for _, r := range b.Echo.Routes() {
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
					resp, err := c.HTTP.Post(c.Base+path, contentType, &body)
					require.NoError(t, err)
					got := handlerstest.ReadBody(t, resp)
					where := []any{"%s %s, field %s, %s, multipart %t: %s", r.Method, r.Path, name, kind, multi, got}
					require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, where...)
					switch {
					case strings.HasPrefix(path, "/api/"), strings.HasPrefix(path, "/webhooks/"):
						var e handlerstest.APIErrorJSON
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
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "reported")

	resp := c.PostKeyForm(url.Values{"name": {"ab\x00cd"}, "expiry": {"never"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "“name”: Use text without NUL characters or invalid UTF-8.")

	anon := b.Client(t)
	resp = anon.Post("/login", "/login", url.Values{"email": {"a\xffb@x.test"}, "password": {"x"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "“email”")

	req, err := http.NewRequest(http.MethodGet, b.Server.URL+"/signup/verify?email=a%00b%40x.test", nil)
	require.NoError(t, err)
	req.Header.Set("Accept-Language", "zh-CN")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "“email”: 请使用不含 NUL 字符或无效 UTF-8 的文本。")
}

// TestRequestTooLargeTranslated: the 413 says so in the reader's language,
// on the error page and in the API's JSON.
func TestRequestTooLargeTranslated(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	big := strings.Repeat("x", 2<<20)
	for _, tc := range []struct {
		path, lang, want string
	}{
		{"/login", "en", "The request is too large"},
		{"/login", "zh-CN", "请求内容过大"},
		{"/api/v1/clusters", "en", `{"error":{"code":"request_entity_too_large","message":"The request is too large"}}`},
		{"/api/v1/clusters", "zh-CN", `{"error":{"code":"request_entity_too_large","message":"请求内容过大"}}`},
	} {
		req, err := http.NewRequest(http.MethodPost, b.Server.URL+tc.path, strings.NewReader(big))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept-Language", tc.lang)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body := handlerstest.ReadBody(t, resp)
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

// withHeader plays a client that sends a header with every request.
type withHeader struct {
	name, value string
	next        http.RoundTripper
}

func (h withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.next.RoundTrip(r)
}

// TestUnstorableHeaders signs in and saves the profile with a User-Agent
// PostgreSQL cannot store as it is (invalid UTF-8) or that is far too long:
// both succeed, and the session and the audit events keep the header made
// storable and cut to 512 bytes on a character boundary. (Go's server
// refuses a NUL in a header itself, with 400.)
func TestUnstorableHeaders(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tests := []struct {
		name, userAgent, want string
	}{
		{"invalid utf-8", "Mozilla/5.0 \xff\xfe (X11)", "Mozilla/5.0 \uFFFD (X11)"},
		{"long", strings.Repeat("x", 512<<10), strings.Repeat("x", 512)},
		{"cut on a character", strings.Repeat("名", 200), strings.Repeat("名", 170)},
		{"invalid and long", strings.Repeat("a\xff", 400), strings.Repeat("a\uFFFD", 128)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("agent%d", i)
			_, email := b.SignedUpUser(t, name)
			id := b.UserID(t, email)
			c := b.Client(t)
			c.HTTP.Transport = withHeader{name: "User-Agent", value: tt.userAgent, next: c.HTTP.Transport}

			resp := c.Post("/login", "/login", url.Values{"email": {email}, "password": {"password of " + name}})
			require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
			resp = c.Post(handlerstest.ProfilePage, handlerstest.ProfilePage, url.Values{"name": {"Agent"}, "language": {""}})
			require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))

			ctx := context.Background()
			var session string
			require.NoError(t, b.Pool.QueryRow(ctx, "SELECT user_agent FROM user_sessions WHERE user_id = $1 ORDER BY created_at DESC LIMIT 1", id).Scan(&session))
			require.Equal(t, tt.want, session)
			rows, err := b.Pool.Query(ctx, `SELECT action, user_agent FROM audit_events
				WHERE actor_id = $1 AND action IN ('user.sign_in', 'user.update_profile') ORDER BY id`, id)
			require.NoError(t, err)
			stored := map[string]string{}
			for rows.Next() {
				var action, ua string
				require.NoError(t, rows.Scan(&action, &ua))
				stored[action] = ua
			}
			require.NoError(t, rows.Err())
			require.Equal(t, map[string]string{"user.sign_in": tt.want, "user.update_profile": tt.want}, stored)
		})
	}
}

// TestUnstorablePathParams asks every route with a path parameter for a
// NUL or invalid UTF-8 in each parameter in turn (as an admin, with a
// valid CSRF token): each is 404 before any handler or query sees it, as
// an unknown path is, in the route's kind of answer.
func TestUnstorablePathParams(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpAdmin(t, "unstorable-path")
	token := c.CSRF("/settings/api-keys")
	param := regexp.MustCompile(`:[a-zA-Z]+|\*`)
	tested := 0
	for _, r := range b.Echo.Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		params := param.FindAllStringIndex(r.Path, -1)
		for i := range params {
			for kind, value := range map[string]string{"nul": "a%00b", "invalid utf-8": "a%FFb"} {
				n := -1
				path := param.ReplaceAllStringFunc(r.Path, func(string) string {
					if n++; n == i {
						return value
					}
					return "1"
				})
				var body io.Reader = http.NoBody
				if r.Method == http.MethodPost {
					body = strings.NewReader(url.Values{"_csrf": {token}}.Encode())
				}
				req, err := http.NewRequest(r.Method, c.Base+path, body)
				require.NoError(t, err)
				if r.Method == http.MethodPost {
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
				resp, err := c.HTTP.Do(req)
				require.NoError(t, err)
				got := handlerstest.ReadBody(t, resp)
				where := []any{"%s %s (%s), %s: %s", r.Method, r.Path, path, kind, got}
				require.Equal(t, http.StatusNotFound, resp.StatusCode, where...)
				tested++
				switch {
				case r.Method == http.MethodHead:
				case strings.HasPrefix(path, "/api/"), strings.HasPrefix(path, "/webhooks/"):
					var e handlerstest.APIErrorJSON
					require.NoError(t, json.Unmarshal([]byte(got), &e), where...)
					require.Equal(t, "not_found", e.Error.Code, where...)
				case strings.HasPrefix(path, "/join/"):
					require.Contains(t, got, "exit 1", where...)
				default:
					require.Contains(t, got, `data-testid="error-page"`, where...)
				}
			}
		}
	}
	require.GreaterOrEqual(t, tested, 100)
}

// TestUnstorablePathParamsReported is the request the report named: the
// owner's own cluster and key, a host name with a NUL or invalid UTF-8:
// 404 in the API's JSON, nothing recorded.
func TestUnstorablePathParamsReported(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "reported-path")
	key := c.CreateKey("path")
	id := b.InsertCluster(t, b.UserID(t, email), "shop", "shop", "v1.34.0", "nodeport", "ready")
	for _, name := range []string{"a%00b", "a%FFb"} {
		r := b.APICall(t, http.MethodDelete, fmt.Sprintf("/api/v1/clusters/%d/hostnames/%s", id, name), key, "")
		require.Equal(t, http.StatusNotFound, r.Status, r.Body)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		e := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r)
		require.Equal(t, "not_found", e.Error.Code, r.Body)
		require.NotEmpty(t, e.Error.Message, r.Body)
	}
	require.Zero(t, b.AuditCount(t, "cluster.hostname_remove"))
}
