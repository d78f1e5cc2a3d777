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
	"github.com/kubebyon/kubebyon/locale"
	"github.com/kubebyon/kubebyon/testenv"
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
	e := handlers.New(handlers.Deps{
		Pool: pool, Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Catalog: catalog,
		BaseURL: "http://localhost", Metrics: reg, Gatherer: reg,
	})
	e.GET("/fails", func(echo.Context) error { return errors.New("secret internal detail") })
	e.GET("/panics", func(echo.Context) error { panic("secret panic detail") })
	e.GET("/api/v1/fails", func(echo.Context) error { return errors.New("secret api detail") })
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	for _, path := range []string{"/fails", "/panics", "/api/v1/fails"} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusInternalServerError, resp.StatusCode, path)
		reqID := resp.Header.Get("X-Request-Id")
		require.NotEmpty(t, reqID, path)
		require.NotContains(t, string(body), "secret", path)
		if path == "/api/v1/fails" {
			require.JSONEq(t, `{"error":{"code":"internal_server_error","message":"Something went wrong"}}`, string(body))
		} else {
			require.Contains(t, string(body), `data-testid="error-page"`, path)
			require.Contains(t, string(body), reqID, path)
		}
		require.Contains(t, logs.String(), reqID, "%s: the log names the request", path)
	}
	require.Contains(t, logs.String(), "secret internal detail")
	require.Contains(t, logs.String(), "secret panic detail")
}
