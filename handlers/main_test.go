package handlers_test

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/locale"
	"github.com/kubebyon/kubebyon/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type testBundle struct {
	pool   *pgxpool.Pool
	server *httptest.Server
}

// setup serves the real handlers on a database of the test's own.
func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := testenv.DB(t)
	catalog, err := locale.New()
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	rc, err := jobs.NewClient(jobs.Deps{Pool: pool, Logger: logger, Metrics: reg}, jobs.DefaultOptions(false))
	require.NoError(t, err)
	e := handlers.New(handlers.Deps{
		Pool: pool, River: rc, Logger: logger, Catalog: catalog,
		BaseURL: "http://localhost", Metrics: reg, Gatherer: reg,
	})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return &testBundle{pool: pool, server: srv}
}
