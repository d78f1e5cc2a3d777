package handlers_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProbesAndMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)

	get := func(path string) (int, string) {
		resp, err := http.Get(b.server.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}

	code, body := get("/healthz")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"status":"ok"}`, body)

	code, body = get("/readyz")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"status":"ok"}`, body)

	code, body = get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `kubebyon_http_request_duration_seconds_count{code="200",method="GET",route="/readyz"} 1`)

	// A schema behind this build makes the platform not ready, with a
	// message that says what to do.
	_, err := b.pool.Exec(context.Background(), "UPDATE schema_version SET version = version - 1")
	require.NoError(t, err)
	code, body = get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "kubebyon migrate")
}
