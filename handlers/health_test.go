package handlers_test

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// fetch sends one request and returns its status and body.
func fetch(t *testing.T, client *http.Client, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// withRegistry gives the handlers a metrics registry of the test's own.
func withRegistry(reg *prometheus.Registry) func(*handlers.Deps) {
	return func(d *handlers.Deps) { d.Metrics, d.Gatherer = reg, reg }
}

func TestProbesAndMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b := handlerstest.Setup(t, withRegistry(reg))
	// The metrics listener of 'serve': apart from the public one.
	probes := httptest.NewServer(handlers.NewProbes(handlers.Deps{Pool: b.Pool, Logger: slog.New(slog.DiscardHandler), Gatherer: reg}))
	t.Cleanup(probes.Close)
	get := func(base, path string) (int, string) { return fetch(t, http.DefaultClient, http.MethodGet, base+path) }

	for _, base := range []string{b.Server.URL, probes.URL} {
		code, body := get(base, "/healthz")
		require.Equal(t, http.StatusOK, code)
		require.JSONEq(t, `{"status":"ok"}`, body)

		code, body = get(base, "/readyz")
		require.Equal(t, http.StatusOK, code)
		require.JSONEq(t, `{"status":"ok"}`, body)
	}

	code, _ := get(b.Server.URL, "/metrics")
	require.Equal(t, http.StatusNotFound, code, "the public listener must not serve /metrics")
	code, body := get(probes.URL, "/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `kubebyon_http_request_duration_seconds_count{code="200",method="GET",route="/readyz"} 1`)
	require.Contains(t, body, `kubebyon_http_request_duration_seconds_count{code="404",method="GET",route="unmatched"} 1`)

	// A schema behind this build makes the platform not ready, with a
	// short reason; the details are for the log only.
	_, err := b.Pool.Exec(context.Background(), "UPDATE schema_version SET version = version - 1")
	require.NoError(t, err)
	for _, base := range []string{b.Server.URL, probes.URL} {
		code, body := get(base, "/readyz")
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.JSONEq(t, `{"status":"unavailable","error":"schema out of date"}`, body)
	}
}

// TestMetricsLabelsAreBounded sends requests with made-up methods and paths,
// as anyone on the internet can: they must not add series.
func TestMetricsLabelsAreBounded(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b := handlerstest.Setup(t, withRegistry(reg))
	const name = "kubebyon_http_request_duration_seconds"

	madeUp := func(n int) {
		for range n {
			word := strings.ToUpper(rand.Text()[:8])
			for _, path := range []string{"/", "/healthz", "/clusters/1", "/no/such/" + word, "/static/" + word, "/api/v1/" + word} {
				fetch(t, http.DefaultClient, word, b.Server.URL+path)
				fetch(t, http.DefaultClient, http.MethodGet, b.Server.URL+path+"/"+word)
			}
		}
	}
	madeUp(3)
	series, err := testutil.GatherAndCount(reg, name)
	require.NoError(t, err)
	madeUp(50)
	after, err := testutil.GatherAndCount(reg, name)
	require.NoError(t, err)
	require.Equal(t, series, after, "made-up methods and paths added series")

	probes := httptest.NewServer(handlers.NewProbes(handlers.Deps{Gatherer: reg}))
	t.Cleanup(probes.Close)
	_, body := fetch(t, http.DefaultClient, http.MethodGet, probes.URL+"/metrics")
	require.Contains(t, body, `method="OTHER"`)
	require.Contains(t, body, `route="unmatched"`)
	require.NotContains(t, body, "/no/such/")
}

// TestReadinessWithHungDatabase stops every process of a PostgreSQL server
// of the test's own, as a hung database host would: /readyz must answer 503
// within its own short timeout, not after the 30 s request timeout.
func TestReadinessWithHungDatabase(t *testing.T) {
	t.Parallel()
	pool, freeze, _ := handlerstest.PrivateDB(t)
	b := handlerstest.Setup(t, func(d *handlers.Deps) { d.Pool = pool })

	// Shorter than the request timeout, longer than the probe's own.
	client := &http.Client{Timeout: 10 * time.Second}
	code, _ := fetch(t, client, http.MethodGet, b.Server.URL+"/readyz")
	require.Equal(t, http.StatusOK, code)

	freeze()
	code, body := fetch(t, client, http.MethodGet, b.Server.URL+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.JSONEq(t, `{"status":"unavailable","error":"database unreachable"}`, body)
	require.NotContains(t, body, "kubebyon-hang-", "the socket path is for the log")
}
