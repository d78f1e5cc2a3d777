package handlers

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// secretParams are the path parameters that carry a credential: a route
// with one must have its value redacted from the request log.
var secretParams = map[string]bool{"token": true, "key": true, "secret": true, "code": true}

// TestRedactPathCoversSecretRoutes walks every route the server has: each
// value of a secret parameter is gone from the logged path, and every other
// parameter's value stays (so the check cannot pass by redacting all).
func TestRedactPathCoversSecretRoutes(t *testing.T) {
	t.Parallel()
	catalog, err := locale.New()
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	e := New(Deps{
		Pool: testenv.DB(t), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Catalog: catalog,
		BaseURL: "http://localhost", Metrics: reg, Gatherer: reg,
	})
	secretRoutes := 0
	for _, r := range e.Routes() {
		segs := strings.Split(r.Path, "/")
		var secret bool
		for i, s := range segs {
			name, ok := strings.CutPrefix(s, ":")
			switch {
			case !ok:
			case secretParams[name]:
				segs[i], secret = "SECRETVALUE", true
			default:
				segs[i] = "PLAINVALUE"
			}
		}
		path := strings.Join(segs, "/")
		got := redactPath(path)
		if secret {
			secretRoutes++
			require.NotContains(t, got, "SECRETVALUE", "%s %s logs its secret", r.Method, r.Path)
		}
		if strings.Contains(path, "PLAINVALUE") {
			require.Contains(t, got, "PLAINVALUE", "%s %s hides more than its secret", r.Method, r.Path)
		}
	}
	require.GreaterOrEqual(t, secretRoutes, 3, "the join and webhook routes were seen")
}
