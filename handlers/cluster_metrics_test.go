package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// seriesJSON is the metrics JSON as clients read it.
type seriesJSON struct {
	Range      string     `json:"range"`
	Step       int64      `json:"step"`
	Time       []int64    `json:"time"`
	ReadRate   []*float64 `json:"read_rate"`
	WriteRate  []*float64 `json:"write_rate"`
	ErrorRate  []*float64 `json:"error_rate"`
	LatencyP99 []*float64 `json:"latency_p99"`
	Objects    []*int64   `json:"objects"`
	NodesReady []*int32   `json:"nodes_ready"`
	NodesTotal []*int32   `json:"nodes_total"`
}

// TestClusterMetricsAPI reads a cluster's seeded hour through the API
// with a key: every figure, the unreachable scrape as nulls; the longer
// ranges answer from the rollups; a range not offered is 422 in JSON;
// another user's cluster, a deleted one, and no key are refused.
func TestClusterMetricsAPI(t *testing.T) {
	t.Parallel()
	for _, store := range handlerstest.MetricsStores {
		t.Run(store.Name, func(t *testing.T) {
			t.Parallel()
			testClusterMetricsAPI(t, handlerstest.SetupMetrics(t, store))
		})
	}
}

func testClusterMetricsAPI(t *testing.T, b *handlerstest.Bundle) {
	owner, ownerEmail := b.SignedUpUser(t, "gauges")
	other, _ := b.SignedUpUser(t, "peeker")
	ownerKey, otherKey := owner.CreateKey("charts"), other.CreateKey("peek")
	cl := b.MetricsCluster(t, ownerEmail, "gauged")
	times := b.SeedMetrics(t, cl.ID)
	path := fmt.Sprintf("/api/v1/clusters/%d/metrics", cl.ID)

	r := b.APICall(t, http.MethodGet, path+"?range=1h", ownerKey, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	require.Contains(t, r.Header.Get("Content-Type"), "application/json")
	s := handlerstest.DecodeAs[seriesJSON](t, r)
	require.Equal(t, "1h", s.Range)
	require.Equal(t, int64(60), s.Step)
	require.Len(t, s.Time, handlerstest.SeededPoints)
	last := times[handlerstest.SeededPoints-1]
	if b.MetricsVM != "" {
		// PromQL answers at the steps: each point at the start of its
		// minute.
		last = last.Truncate(time.Minute)
	}
	require.Equal(t, last.Unix(), s.Time[handlerstest.SeededPoints-1])
	for _, col := range [][]*float64{s.ReadRate, s.WriteRate, s.ErrorRate, s.LatencyP99} {
		require.Len(t, col, handlerstest.SeededPoints)
		require.Nil(t, col[handlerstest.UnreachablePoint], "an unreachable scrape is a gap, not a zero")
	}
	require.Equal(t, 59.0, *s.ReadRate[59])
	require.Equal(t, 29.5, *s.WriteRate[59])
	require.Equal(t, 0.2, *s.LatencyP99[0])
	require.Equal(t, int64(159), *s.Objects[59])
	require.Nil(t, s.Objects[handlerstest.UnreachablePoint])
	require.Equal(t, int32(2), *s.NodesReady[0])
	require.Equal(t, int32(3), *s.NodesTotal[0])

	// Without a range, an hour.
	r = b.APICall(t, http.MethodGet, path, ownerKey, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Len(t, handlerstest.DecodeAs[seriesJSON](t, r).Time, handlerstest.SeededPoints)

	// The longer ranges read the rollups: the seeded hour in 5-minute
	// windows once they are rolled up (the periodic job may have begun).
	windows := b.RollUpMetrics(t, times)
	for _, rng := range []string{"24h", "7d", "30d"} {
		r = b.APICall(t, http.MethodGet, path+"?range="+rng, ownerKey, "")
		require.Equal(t, http.StatusOK, r.Status, rng+": "+r.Body)
		s = handlerstest.DecodeAs[seriesJSON](t, r)
		require.Equal(t, rng, s.Range)
		require.Len(t, s.ReadRate, len(s.Time), rng)
		require.Len(t, s.NodesTotal, len(s.Time), rng)
	}
	r = b.APICall(t, http.MethodGet, path+"?range=24h", ownerKey, "")
	s = handlerstest.DecodeAs[seriesJSON](t, r)
	require.Equal(t, int64(300), s.Step)
	require.Len(t, s.Time, windows, "the seeded hour in 5-minute windows")
	require.Len(t, s.ReadRate, len(s.Time))

	// A cluster without figures: empty arrays, not nulls.
	fresh := b.MetricsCluster(t, ownerEmail, "unseen")
	r = b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/clusters/%d/metrics?range=24h", fresh.ID), ownerKey, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"time":[]`)
	require.Contains(t, r.Body, `"read_rate":[]`)
	require.Contains(t, r.Body, `"nodes_total":[]`)

	for _, bad := range []string{"2h", "1H", "all", "30d%3Bdrop"} {
		r = b.APICall(t, http.MethodGet, path+"?range="+bad, ownerKey, "")
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, bad)
		e := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error
		require.Equal(t, "invalid", e.Code)
		require.Equal(t, "Choose a range of 1h, 24h, 7d or 30d.", e.Message)
		require.Equal(t, e.Message, e.Fields["range"])
	}

	// Another user's key finds no such cluster, with or without a range.
	for _, p := range []string{path, path + "?range=24h"} {
		r = b.APICall(t, http.MethodGet, p, otherKey, "")
		require.Equal(t, http.StatusNotFound, r.Status, p)
		require.Equal(t, "Cluster not found", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Message)
		require.NotContains(t, r.Body, "read_rate")
	}
	handlerstest.RequireUnauthorized(t, b.APICall(t, http.MethodGet, path, "", ""), "no key")
	// A browser session counts for nothing on the API.
	status, _ := owner.Get(path)
	require.Equal(t, http.StatusUnauthorized, status)

	// A deleted cluster's history is gone with it.
	_, err := b.Pool.Exec(context.Background(), "UPDATE clusters SET status = 'deleted' WHERE id = $1", cl.ID)
	require.NoError(t, err)
	r = b.APICall(t, http.MethodGet, path, ownerKey, "")
	require.Equal(t, http.StatusNotFound, r.Status)
}

// TestClusterMetricsPage: the page and its JSON with the session, for
// the owner only; the table has the latest points, newest first, the
// unreachable one said in words; a cluster without figures yet says when
// they come; the range switch's fragment is the body alone.
func TestClusterMetricsPage(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	owner, ownerEmail := b.SignedUpUser(t, "plotter")
	other, _ := b.SignedUpUser(t, "snoop")
	cl := b.MetricsCluster(t, ownerEmail, "plotted")
	fresh := b.MetricsCluster(t, ownerEmail, "fresh")
	b.SeedMetrics(t, cl.ID)
	page := fmt.Sprintf("/clusters/%d/metrics", cl.ID)

	resp, err := owner.HTTP.Get(owner.Base + page)
	require.NoError(t, err)
	body := handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Contains(t, body, "<title>Metrics of plotted · ")
	require.Contains(t, body, `<h1 data-testid="page-title">plotted</h1>`)
	require.Contains(t, body, `data-testid="cluster-metrics" aria-current="page"`)
	require.Contains(t, body, fmt.Sprintf(`data-src="/clusters/%d/metrics.json?range=1h"`, cl.ID))
	require.Contains(t, body, `data-range="1h" aria-current="page"`)
	require.Equal(t, 5, strings.Count(body, `class="metrics-chart"`))
	require.Equal(t, 60, strings.Count(body, `data-testid="metrics-row"`))
	require.Contains(t, body, "The latest 60 of 60 points in this range, newest first.")
	require.Equal(t, 1, strings.Count(body, `data-testid="metrics-row-unreachable"`))
	// The newest row first: 59 reads/s, 29.5 writes/s, p99 200 ms, 159
	// objects, 2 of 3 nodes Ready.
	first := body[strings.Index(body, `data-testid="metrics-row"`):]
	first = first[:strings.Index(first, "</tr>")]
	for _, cell := range []string{"<td>59</td>", "<td>29.5</td>", "<td>0.25</td>", "<td>10</td>", "<td>200</td>", "<td>159</td>", "<td>2/3</td>"} {
		require.Contains(t, first, cell)
	}
	require.NotContains(t, body, "metrics-empty")
	// Without JavaScript: the table, and range links that are links.
	require.Contains(t, body, "<noscript><p>The charts need JavaScript; the table below has the same figures.</p></noscript>")
	require.Contains(t, body, fmt.Sprintf(`href="/clusters/%d/metrics?range=7d"`, cl.ID))

	// The JSON the page's script reads.
	status, js := owner.Get(fmt.Sprintf("/clusters/%d/metrics.json?range=1h", cl.ID))
	require.Equal(t, http.StatusOK, status, js)
	require.Contains(t, js, `"range":"1h"`)
	status, js = owner.Get(fmt.Sprintf("/clusters/%d/metrics.json?range=week", cl.ID))
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Contains(t, js, `"code":"invalid"`, "JSON for the script, not a page")

	// A range switch asks for the body alone.
	resp, frag := owner.HTMX(page + "?range=24h")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, frag, "<html")
	require.Contains(t, frag, `id="cluster-metrics"`)
	require.Contains(t, frag, `data-range="24h" aria-current="page"`)
	require.Contains(t, frag, fmt.Sprintf(`data-src="/clusters/%d/metrics.json?range=24h"`, cl.ID))

	status, body = owner.Get(page + "?range=forever")
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Contains(t, body, "Choose a range of 1h, 24h, 7d or 30d.")

	// A cluster without figures yet.
	status, body = owner.Get(fmt.Sprintf("/clusters/%d/metrics", fresh.ID))
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Metrics appear a minute after the cluster is ready.")
	require.NotContains(t, body, `class="metrics-chart"`)

	// The cluster page links the metrics.
	_, body = owner.Get(fmt.Sprintf("/clusters/%d", cl.ID))
	require.Contains(t, body, fmt.Sprintf(`href="/clusters/%d/metrics"`, cl.ID))
	require.Contains(t, body, `data-testid="cluster-metrics"`)

	// Another user: not found, page and JSON.
	for _, p := range []string{page, page + "?range=7d", fmt.Sprintf("/clusters/%d/metrics.json?range=1h", cl.ID)} {
		status, body = other.Get(p)
		require.Equal(t, http.StatusNotFound, status, p)
		require.NotContains(t, body, "read_rate")
	}
	// Signed out: to the sign-in page.
	status, _ = b.Client(t).Get(page)
	require.Equal(t, http.StatusSeeOther, status)
}
