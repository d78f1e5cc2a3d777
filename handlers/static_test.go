package handlers_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/static"
)

// rawGet fetches a path with the given request headers and no cookies,
// with Go's transparent gzip turned off: the body is what came over the
// wire.
func rawGet(t *testing.T, b *handlerstest.Bundle, path string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.Server.URL+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c := &http.Client{
		Transport:     &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

func gunzip(t *testing.T, body []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(body))
	require.NoError(t, err)
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	return out
}

func sessionCount(t *testing.T, b *handlerstest.Bundle) int {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM sessions").Scan(&n))
	return n
}

// TestStaticFiles: the layout links each static file by a name with the
// hash of its content, served for a year (immutable) with the hash as
// ETag, gzip-compressed ahead for clients that take gzip; the plain name
// still works with an hour's cache; a wrong hash is 404; /favicon.ico is
// the icon. None of it touches the session: no cookie, no session row.
func TestStaticFiles(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, page := rawGet(t, b, "/login")
	sessions := sessionCount(t, b)

	const gzipAll = "gzip, deflate, br, zstd"
	hashed := regexp.MustCompile(`^/static/(.+)\.([0-9a-f]{10})(\.[a-z]+)$`)
	for _, tt := range []struct {
		name, contentType string
		// compressed: the file has a gzip copy (the icon is too small).
		compressed bool
	}{
		{"dist/pico.min.css", "text/css; charset=utf-8", true},
		{"app.css", "text/css; charset=utf-8", true},
		{"dist/htmx.min.js", "text/javascript; charset=utf-8", true},
		{"copy.js", "text/javascript; charset=utf-8", true},
		{"favicon.svg", "image/svg+xml", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, err := static.FS.ReadFile(tt.name)
			require.NoError(t, err)
			url := static.URL(tt.name)
			m := hashed.FindStringSubmatch(url)
			require.NotNil(t, m, "%s is linked as %s, without a hash", tt.name, url)
			require.Equal(t, tt.name, m[1]+m[3])
			require.Contains(t, string(page), `="`+url+`"`, "the layout links the hashed name")

			// Plain: what curl or a client without gzip gets.
			resp, body := rawGet(t, b, url)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, want, body)
			require.Equal(t, "public, max-age=31536000, immutable", resp.Header.Get("Cache-Control"))
			require.Equal(t, tt.contentType, resp.Header.Get("Content-Type"))
			require.Empty(t, resp.Header.Get("Content-Encoding"))
			require.Empty(t, resp.Header.Values("Set-Cookie"))
			etag := resp.Header.Get("ETag")
			require.Equal(t, `"`+m[2]+`"`, etag, "the ETag is the content hash")

			resp, body = rawGet(t, b, url, "If-None-Match", etag)
			require.Equal(t, http.StatusNotModified, resp.StatusCode)
			require.Empty(t, body)
			require.Equal(t, etag, resp.Header.Get("ETag"))
			require.Empty(t, resp.Header.Values("Set-Cookie"))

			// Refused gzip is no gzip.
			resp, body = rawGet(t, b, url, "Accept-Encoding", "gzip;q=0, identity")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Empty(t, resp.Header.Get("Content-Encoding"))
			require.Equal(t, want, body)

			resp, body = rawGet(t, b, url, "Accept-Encoding", gzipAll)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, tt.contentType, resp.Header.Get("Content-Type"))
			require.Equal(t, "public, max-age=31536000, immutable", resp.Header.Get("Cache-Control"))
			require.Empty(t, resp.Header.Values("Set-Cookie"))
			if !tt.compressed {
				require.Empty(t, resp.Header.Get("Content-Encoding"))
				require.Equal(t, want, body)
			} else {
				require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
				require.Contains(t, resp.Header.Values("Vary"), "Accept-Encoding")
				require.Less(t, len(body), len(want))
				require.Equal(t, want, gunzip(t, body))
				gzETag := resp.Header.Get("ETag")
				require.NotEmpty(t, gzETag)
				require.NotEqual(t, etag, gzETag, "the compressed copy is another representation")
				resp, body = rawGet(t, b, url, "Accept-Encoding", gzipAll, "If-None-Match", gzETag)
				require.Equal(t, http.StatusNotModified, resp.StatusCode)
				require.Empty(t, body)
			}

			// The plain name, as linked before hashes: an hour, same ETag.
			resp, body = rawGet(t, b, "/static/"+tt.name)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, want, body)
			require.Equal(t, "public, max-age=3600", resp.Header.Get("Cache-Control"))
			require.Equal(t, etag, resp.Header.Get("ETag"))
			require.Empty(t, resp.Header.Values("Set-Cookie"))
			resp, _ = rawGet(t, b, "/static/"+tt.name, "If-None-Match", etag)
			require.Equal(t, http.StatusNotModified, resp.StatusCode)

			// A hash that is not the file's: an old release's, or made up.
			stale := "0000000000"
			require.NotEqual(t, stale, m[2])
			resp, _ = rawGet(t, b, "/static/"+m[1]+"."+stale+m[3])
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
			require.Empty(t, resp.Header.Values("Set-Cookie"))
		})
	}

	icon, err := static.FS.ReadFile("favicon.svg")
	require.NoError(t, err)
	require.Contains(t, string(page), `<link rel="icon" href="`+static.URL("favicon.svg")+`" type="image/svg+xml">`)
	resp, body := rawGet(t, b, "/favicon.ico", "Accept-Encoding", gzipAll)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"))
	require.Equal(t, icon, body)
	require.Equal(t, "public, max-age=3600", resp.Header.Get("Cache-Control"))
	require.NotEmpty(t, resp.Header.Get("ETag"))
	require.Empty(t, resp.Header.Values("Set-Cookie"))
	// The policy lets the page load its icon (and the rest) from itself.
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "img-src 'self'")

	resp, _ = rawGet(t, b, "/static/no-such-file.css")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Empty(t, resp.Header.Values("Set-Cookie"))

	require.Equal(t, sessions, sessionCount(t, b), "static files and the icon made no session")
}

// csrfTokens are the per-session tokens in a page, which differ between
// two fetches without cookies.
var csrfTokens = regexp.MustCompile(`(name="_csrf" value="|&#34;X-CSRF-Token&#34;: &#34;|"X-CSRF-Token": ")[^"&]+`)

// TestStaticCompressedPages: pages, errors and htmx fragments come
// gzip-compressed to clients that take gzip, the same page as without;
// plain to those that do not ask, and small responses stay plain.
func TestStaticCompressedPages(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	same := func(s []byte) string { return csrfTokens.ReplaceAllString(string(s), "${1}TOKEN") }

	for _, path := range []string{"/login", "/signup", "/no/such/page"} {
		plain, plainBody := rawGet(t, b, path)
		require.Empty(t, plain.Header.Get("Content-Encoding"), path)
		require.Contains(t, plain.Header.Values("Vary"), "Accept-Encoding", path)
		require.Contains(t, string(plainBody), "</html>", path)

		gz, gzBody := rawGet(t, b, path, "Accept-Encoding", "gzip, deflate, br")
		require.Equal(t, plain.StatusCode, gz.StatusCode, path)
		require.Equal(t, "gzip", gz.Header.Get("Content-Encoding"), path)
		require.Equal(t, "text/html; charset=UTF-8", gz.Header.Get("Content-Type"), path)
		require.Contains(t, gz.Header.Values("Vary"), "Accept-Encoding", path)
		// Stateless compression still finds the page's repeats: well
		// under two thirds of the size (a page takes about 45%).
		require.Less(t, 3*len(gzBody), 2*len(plainBody), "%s: %d bytes compressed of %d", path, len(gzBody), len(plainBody))
		require.Equal(t, same(plainBody), same(gunzip(t, gzBody)), path)
	}

	// A small response: not worth compressing.
	resp, body := rawGet(t, b, "/healthz", "Accept-Encoding", "gzip")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Content-Encoding"))
	require.Contains(t, string(body), "ok")

	// An htmx fragment, through a browser-like client (Go's transport asks
	// for gzip and decompresses: Uncompressed says it came compressed).
	admin, _ := b.SignedUpAdmin(t, "gzfragment")
	resp, fragment := admin.HTMX("/admin/users")
	require.Equal(t, http.StatusOK, resp.StatusCode, fragment)
	require.Contains(t, fragment, `data-testid="admin-users-results"`)
	require.NotContains(t, fragment, "<html", "a fragment, not a page")
	require.Equal(t, len(fragment) >= 1024, resp.Uncompressed, "compressed when 1 KB or more (%d bytes)", len(fragment))
}

// TestStaticJoinScriptPlain: the join script, piped from curl into sh,
// comes plain to a client that does not ask for gzip (curl without
// --compressed), and compressed only to one that does.
func TestStaticJoinScriptPlain(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	cp := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(cp.Close)
	token, _ := handlerstest.ScriptToken(t, b, cp)

	resp, plain := rawGet(t, b, "/join/"+token)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(plain))
	require.Empty(t, resp.Header.Get("Content-Encoding"))
	require.True(t, strings.HasPrefix(string(plain), "#!/bin/sh"), "%.100s", plain)
	require.Greater(t, len(plain), 1024, "big enough that it would be compressed if asked")

	out, err := exec.Command("curl", "-fsSL", b.Server.URL+"/join/"+token).Output()
	require.NoError(t, err)
	require.Equal(t, string(plain), string(out), "curl gets the script as is")

	resp, gz := rawGet(t, b, "/join/"+token, "Accept-Encoding", "gzip")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
	require.Equal(t, string(plain), string(gunzip(t, gz)))
}

// TestPagesWrittenWhole: a page is rendered whole before it is written, so
// it goes out with its Content-Length; compressed, with the length of what
// was sent, or none.
func TestPagesWrittenWhole(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	for _, path := range []string{"/login", "/no/such/page"} {
		plain, body := rawGet(t, b, path)
		require.Equal(t, strconv.Itoa(len(body)), plain.Header.Get("Content-Length"), path)
		require.Contains(t, string(body), "</html>", path)

		gz, gzBody := rawGet(t, b, path, "Accept-Encoding", "gzip")
		require.Equal(t, "gzip", gz.Header.Get("Content-Encoding"), path)
		if n := gz.Header.Get("Content-Length"); n != "" {
			require.Equal(t, strconv.Itoa(len(gzBody)), n, path)
		}
		require.Contains(t, string(gunzip(t, gzBody)), "</html>", path)
	}
}
