package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/queries"
)

// TestAdminMetricsSettings: the defaults are shown; a bad field is a 422
// at that field, what was typed kept, nothing saved; good settings are
// stored and audited; a user who is not an admin gets 404.
func TestAdminMetricsSettings(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, _ := b.SignedUpAdmin(t, "metrics-settings-admin")
	user, _ := b.SignedUpUser(t, "metrics-settings-user")
	load := func() metrics.Settings {
		t.Helper()
		st, err := metrics.LoadSettings(ctx, queries.New(b.Pool))
		require.NoError(t, err)
		return st
	}

	code, body := admin.Get("/admin/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-nav-metrics" aria-current="page"`)
	require.Contains(t, body, `id="interval_seconds" name="interval_seconds" type="number" value="60"`)
	require.Contains(t, body, `data-testid="overview-nodes">No node has joined a cluster yet.<`, "not \"0 Ready of 0\"")

	form := url.Values{
		"interval_seconds": {"30"}, "raw_retention_hours": {"72"},
		"five_minute_retention_days": {"14"}, "hourly_retention_days": {"400"},
		"alert_error_rate": {"0.5"}, "alert_latency_p99_ms": {"0"},
	}
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set("interval_seconds", "5")
	bad.Set("hourly_retention_days", "lots")
	bad.Set("alert_error_rate", "NaN")
	resp := admin.Post("/admin/metrics", "/admin/metrics/settings", bad)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	body = handlerstest.ReadBody(t, resp)
	require.Contains(t, body, `data-testid="error-interval_seconds">Enter a number of seconds from 15 to 3600.`)
	require.Contains(t, body, `data-testid="error-hourly_retention_days">`)
	require.Contains(t, body, `data-testid="error-alert_error_rate">`)
	require.Contains(t, body, `value="lots"`, "what was typed is kept")
	require.Equal(t, metrics.DefaultSettings(), load(), "nothing was saved")

	resp = user.Post("/", "/admin/metrics/settings", form)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	code, _ = user.Get("/admin/metrics")
	require.Equal(t, http.StatusNotFound, code)

	resp = admin.Post("/admin/metrics", "/admin/metrics/settings", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, "/admin/metrics", resp.Header.Get("Location"))
	require.Equal(t, metrics.Settings{
		IntervalSeconds: 30, RawRetentionHours: 72, FiveMinuteRetentionDays: 14, HourlyRetentionDays: 400, AlertErrorRate: 0.5,
	}, load())
	var audited int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'metrics.settings'`).Scan(&audited))
	require.Equal(t, 1, audited)
}

// TestAdminMetricsOverview: the overview counts clusters by status and
// nodes, lists joins per day, the busiest control planes and those
// answering 5xx (with their open alert), each linking to the admin's page
// of the cluster, which shows its owner, alerts and metrics (the JSON
// too) to admins alone.
func TestAdminMetricsOverview(t *testing.T) {
	t.Parallel()
	for _, store := range handlerstest.MetricsStores {
		t.Run(store.Name, func(t *testing.T) {
			t.Parallel()
			testAdminMetricsOverview(t, handlerstest.SetupMetrics(t, store))
		})
	}
}

func testAdminMetricsOverview(t *testing.T, b *handlerstest.Bundle) {
	ctx := context.Background()
	admin, _ := b.SignedUpAdmin(t, "metrics-overview-admin")
	user, email := b.SignedUpUser(t, "metrics-overview-user")
	owner := b.UserID(t, email)
	var busy, failing int64
	require.NoError(t, b.Pool.QueryRow(ctx, `INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		VALUES ($1, 'busy', 'busy-overview', 'v1.34.0', 'nodeport', 'ready') RETURNING id`, owner).Scan(&busy))
	require.NoError(t, b.Pool.QueryRow(ctx, `INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		VALUES ($1, 'failing', 'failing-overview', 'v1.34.0', 'nodeport', 'ready') RETURNING id`, owner).Scan(&failing))
	_, err := b.Pool.Exec(ctx, `INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		VALUES ($1, 'new', 'new-overview', 'v1.34.0', 'nodeport', 'pending')`, owner)
	require.NoError(t, err)
	_, err = b.Pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready, conditions, addresses)
		VALUES ($1, 'n1', true, '[]', '[]'), ($1, 'n2', false, '[]', '[]'), ($2, 'n3', true, '[]', '[]')`, busy, failing)
	require.NoError(t, err)
	_, err = b.Pool.Exec(ctx, `WITH t AS (INSERT INTO join_tokens (cluster_id, token_id, token_hash, sealed_token, description)
		VALUES ($1, 'abcdef', 'hash-overview', 'sealed', 'overview') RETURNING id)
		INSERT INTO join_token_nodes (token_id, node_name, csr_name, first_seen) SELECT id, 'n1', 'csr-n1', now() FROM t`, busy)
	require.NoError(t, err)
	now := time.Now()
	for i, c := range []struct {
		id            int64
		reads, errors float64
	}{{busy, 120, 0}, {failing, 3, 2.5}} {
		for m := 1; m <= 3; m++ {
			smp := metrics.Sample{At: now.Add(-time.Duration(m) * time.Minute), Up: true}
			r, w, e, p := c.reads, 1.0, c.errors, 0.05*float64(i+1)
			smp.ReadRate, smp.WriteRate, smp.ErrorRate, smp.LatencyP99 = &r, &w, &e, &p
			b.RecordMetrics(t, c.id, smp)
		}
	}
	_, err = queries.New(b.Pool).ClusterMetricAlertOpen(ctx, queries.ClusterMetricAlertOpenParams{ClusterID: failing, Kind: string(metrics.AlertErrors)})
	require.NoError(t, err)

	code, body := admin.Get("/admin/metrics")
	require.Equal(t, http.StatusOK, code)
	if b.MetricsVM != "" {
		require.Contains(t, body, `data-testid="metrics-store"><mark>Samples are written to the Prometheus-compatible database at `+b.MetricsVM+" (remote write)")
	} else {
		require.NotContains(t, body, `data-testid="metrics-store"`)
	}
	require.Contains(t, body, `data-testid="overview-status-ready"><a href="/admin/clusters?status=ready">Ready: <strong>2</strong></a>`, "each count links to its clusters")
	require.Contains(t, body, `data-testid="overview-status-pending"><a href="/admin/clusters?status=pending">Pending: <strong>1</strong></a>`)
	require.Contains(t, body, `data-testid="overview-nodes">2 Ready of 3 recorded`)
	require.Contains(t, body, "<td>"+now.UTC().Format(time.DateOnly)+"</td><td>1</td>", "today's join")
	busiest := body[strings.Index(body, `data-testid="overview-busiest"`):strings.Index(body, `data-testid="overview-erroring"`)]
	require.Less(t, strings.Index(busiest, ">busy<"), strings.Index(busiest, ">failing<"), "busiest first")
	require.Contains(t, busiest, fmt.Sprintf(`href="/admin/clusters/%d"`, busy))
	require.Contains(t, busiest, "<td>121</td>", "reads and writes a second")
	erroring := body[strings.Index(body, `data-testid="overview-erroring"`):]
	require.Contains(t, erroring, fmt.Sprintf(`href="/admin/clusters/%d"`, failing))
	require.NotContains(t, erroring, ">busy<", "no errors, not listed")
	require.Contains(t, erroring, "Alert open")

	code, body = admin.Get(fmt.Sprintf("/admin/clusters/%d", failing))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, email)
	require.Contains(t, body, `<mark>Server errors</mark>`)
	require.Contains(t, body, fmt.Sprintf(`data-src="/admin/clusters/%d/metrics.json?range=1h"`, failing))
	require.Contains(t, body, fmt.Sprintf(`href="/admin/clusters/%d/metrics?range=24h"`, failing))
	code, body = admin.Get(fmt.Sprintf("/admin/clusters/%d/metrics.json?range=1h", failing))
	require.Equal(t, http.StatusOK, code)
	var s metrics.Series
	require.NoError(t, json.Unmarshal([]byte(body), &s))
	require.Len(t, s.Time, 3)
	require.InDelta(t, 2.5, *s.ErrorRate[0], 1e-9)
	code, _ = admin.Get(fmt.Sprintf("/admin/clusters/%d/metrics.json?range=2h", failing))
	require.Equal(t, http.StatusUnprocessableEntity, code)
	code, _ = admin.Get("/admin/clusters/999999")
	require.Equal(t, http.StatusNotFound, code)

	// Admins only, even for the owner.
	for _, path := range []string{"/admin/metrics", fmt.Sprintf("/admin/clusters/%d", busy), fmt.Sprintf("/admin/clusters/%d/metrics.json", busy)} {
		code, _ = user.Get(path)
		require.Equal(t, http.StatusNotFound, code, path)
	}
}
