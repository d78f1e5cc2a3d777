package handlers

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// TestPreloadsAreRoutes checks that every route preloads names is a page
// the server serves: a renamed route would otherwise lose its preload
// without a word.
func TestPreloadsAreRoutes(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := New(Deps{Logger: slog.New(slog.DiscardHandler), Metrics: reg, Gatherer: reg, BaseURL: "http://localhost"})
	served := map[string]bool{}
	for _, r := range e.Routes() {
		if r.Method == http.MethodGet {
			served[r.Path] = true
		}
	}
	for path := range preloads() {
		require.True(t, served[path], "preloads names %s, which is no GET route", path)
	}
}
