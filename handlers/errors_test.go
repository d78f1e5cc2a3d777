package handlers_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestServerErrors checks that a failing or panicking handler gives the
// styled 500 page (JSON under /api) with the request ID, logs the details,
// and shows none of them.
func TestServerErrors(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	catalog, err := locale.New()
	require.NoError(t, err)
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	e := handlers.New(handlers.Deps{
		Pool: pool, Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Catalog: catalog,
		BaseURL: "http://localhost", Metrics: reg, Gatherer: reg, Box: box,
	})
	e.GET("/fails", func(echo.Context) error { return errors.New("secret internal detail") })
	e.GET("/panics", func(echo.Context) error { panic("secret panic detail") })
	e.GET("/api/v1/fails", func(echo.Context) error { return errors.New("secret api detail") })
	e.GET("/join/:token/fails", func(echo.Context) error { return errors.New("secret join detail") })
	e.POST("/webhooks/fails", func(echo.Context) error { return errors.New("secret webhook detail") })
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	for _, path := range []string{"/fails", "/panics", "/api/v1/fails", "/join/abc/fails", "/webhooks/fails"} {
		get := http.Get
		if path == "/webhooks/fails" {
			get = func(url string) (*http.Response, error) { return http.Post(url, "application/json", nil) }
		}
		resp, err := get(srv.URL + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusInternalServerError, resp.StatusCode, path)
		reqID := resp.Header.Get("X-Request-Id")
		require.NotEmpty(t, reqID, path)
		require.NotContains(t, string(body), "secret", path)
		switch path {
		case "/api/v1/fails", "/webhooks/fails":
			require.JSONEq(t, `{"error":{"code":"internal_server_error","message":"Something went wrong"}}`, string(body))
		case "/join/abc/fails":
			// What a machine pipes into sh says so and exits 1.
			require.Equal(t, "text/x-shellscript; charset=utf-8", resp.Header.Get("Content-Type"))
			require.Equal(t, "#!/bin/sh\nprintf 'kubebyon: %s\\n' 'Something went wrong' >&2\nexit 1\n", string(body))
		default:
			require.Contains(t, string(body), `data-testid="error-page"`, path)
			require.Contains(t, string(body), reqID, path)
			require.Contains(t, string(body), `href="`+path+`" role="button" data-testid="error-retry"`, "%s: a server error offers trying again", path)
			require.Contains(t, string(body), `href="/status" role="button" class="secondary" data-testid="error-status"`, path)
		}
		require.Contains(t, logs.String(), reqID, "%s: the log names the request", path)
	}
	require.Contains(t, logs.String(), "secret internal detail")
	require.Contains(t, logs.String(), "secret panic detail")
}
