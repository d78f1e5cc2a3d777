package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// metricsCluster makes a ready cluster of the user with this email,
// straight in the database: the metrics pages need no control plane.
func (b *testBundle) metricsCluster(t *testing.T, email, name string) queries.Cluster {
	t.Helper()
	ctx := context.Background()
	q := queries.New(b.pool)
	u, err := q.UserGetByEmail(ctx, email)
	require.NoError(t, err)
	cl, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{
		OwnerID: u.ID, Name: name, Slug: name + "-" + strings.ToLower(fmt.Sprint(u.ID)), KubernetesVersion: "v1.34.0", PublicAccessMode: "nodeport",
	})
	require.NoError(t, err)
	_, err = q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: cl.ID, Endpoint: cl.Slug + ".clusters.test", Generation: cl.Generation})
	require.NoError(t, err)
	return b.cluster(t, cl.ID)
}

// metricsStore is where a test keeps the control planes' metrics: the
// pages must work the same on either.
type metricsStore struct {
	name string
	vm   bool
}

var metricsStores = []metricsStore{{name: "postgres"}, {name: "victoriametrics", vm: true}}

// setupMetrics is setup with the metrics kept in store: PostgreSQL, or a
// VictoriaMetrics of the test's own (written with remote write, read
// with PromQL).
func setupMetrics(t *testing.T, store metricsStore) *testBundle {
	t.Helper()
	if !store.vm {
		return setup(t)
	}
	vm := testenv.VictoriaMetrics(t)
	b := setup(t, func(d *handlers.Deps) {
		d.ClusterMetrics = &metrics.Service{Pool: d.ClusterMetrics.Pool, Backend: metrics.Prom{WriteURL: vm + "/api/v1/write", QueryURL: vm}}
	})
	b.metricsVM = vm
	return b
}

// recordMetrics stores samples of a cluster where the handlers read them,
// searchable at once.
func (b *testBundle) recordMetrics(t *testing.T, clusterID int64, samples ...metrics.Sample) {
	t.Helper()
	for _, smp := range samples {
		require.NoError(t, b.metrics.Record(context.Background(), clusterID, smp))
	}
	if b.metricsVM != "" {
		testenv.FlushVictoriaMetrics(t, b.metricsVM)
	}
}

// seededPoints is how many samples seedMetrics records: an hour of
// scrapes a minute apart.
const seededPoints = 60

// unreachablePoint is the sample seedMetrics records as a scrape that
// did not reach the control plane.
const unreachablePoint = 30

// seedMetrics records an hour of samples of the cluster a minute apart,
// the last now, and returns their times: sample i reads i/s, writes i/2
// per second, has a p99 of 200 ms and 100+i objects, 2 of 3 nodes
// Ready; one did not reach the control plane. (The hour range reaches
// back an hour from when it is asked: the oldest sample stays in it for
// a minute.)
func (b *testBundle) seedMetrics(t *testing.T, clusterID int64) []time.Time {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	times := make([]time.Time, seededPoints)
	samples := make([]metrics.Sample, seededPoints)
	for i := range seededPoints {
		at := now.Add(time.Duration(i-seededPoints+1) * time.Minute)
		times[i] = at
		smp := metrics.Sample{At: at}
		if i != unreachablePoint {
			read, write := float64(i), float64(i)/2
			smp = metrics.Sample{
				At: at, Up: true, ReadRate: &read, WriteRate: &write, WatchRate: ptrTo(0.5), ErrorRate: ptrTo(0.25),
				LatencyP50: ptrTo(0.01), LatencyP99: ptrTo(0.2), Inflight: ptrTo(1.0),
				Objects: ptrTo(int64(100 + i)), Watches: ptrTo(int64(4)),
				NodesReady: ptrTo(int32(2)), NodesTotal: ptrTo(int32(3)), PodsRunning: ptrTo(int32(5)), PodsTotal: ptrTo(int32(5)),
			}
		}
		samples[i] = smp
	}
	b.recordMetrics(t, clusterID, samples...)
	return times
}

// rollUpMetrics runs the maintenance job's work as if ten minutes had
// passed since the seeded samples: they are rolled up into 5-minute rows
// (the 24 h range), and the hours that are complete into hourly ones (in
// PostgreSQL; a VictoriaMetrics sums the steps up when asked). It
// returns how many 5-minute windows the samples fall in.
func (b *testBundle) rollUpMetrics(t *testing.T, times []time.Time) int {
	t.Helper()
	svc := &metrics.Service{Pool: b.pool}
	last := times[len(times)-1]
	// The periodic maintenance job of this test's River client may have
	// rolled up while the samples were being recorded one by one, and
	// marked windows done that it saw half of: start the rollups over
	// from the complete samples. (A run from now on reads them whole and
	// writes the same rows.)
	_, err := b.pool.Exec(context.Background(), "DELETE FROM cluster_metric_rollups; DELETE FROM cluster_metrics_5m; DELETE FROM cluster_metrics_1h")
	require.NoError(t, err)
	require.NoError(t, svc.Maintain(context.Background(), last.Add(10*time.Minute), metrics.DefaultSettings(), slog.New(slog.NewTextHandler(io.Discard, nil))))
	windows := map[time.Time]bool{}
	for _, at := range times {
		windows[at.Truncate(5*time.Minute)] = true
	}
	return len(windows)
}

func ptrTo[T any](v T) *T { return &v }

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
	for _, store := range metricsStores {
		t.Run(store.name, func(t *testing.T) {
			t.Parallel()
			testClusterMetricsAPI(t, setupMetrics(t, store))
		})
	}
}

func testClusterMetricsAPI(t *testing.T, b *testBundle) {
	owner, ownerEmail := b.signedUpUser(t, "gauges")
	other, _ := b.signedUpUser(t, "peeker")
	ownerKey, otherKey := owner.createKey("charts"), other.createKey("peek")
	cl := b.metricsCluster(t, ownerEmail, "gauged")
	times := b.seedMetrics(t, cl.ID)
	path := fmt.Sprintf("/api/v1/clusters/%d/metrics", cl.ID)

	r := b.apiCall(t, http.MethodGet, path+"?range=1h", ownerKey, "")
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Equal(t, "no-store", r.header.Get("Cache-Control"))
	require.Contains(t, r.header.Get("Content-Type"), "application/json")
	s := decodeAs[seriesJSON](t, r)
	require.Equal(t, "1h", s.Range)
	require.Equal(t, int64(60), s.Step)
	require.Len(t, s.Time, seededPoints)
	last := times[seededPoints-1]
	if b.metricsVM != "" {
		// PromQL answers at the steps: each point at the start of its
		// minute.
		last = last.Truncate(time.Minute)
	}
	require.Equal(t, last.Unix(), s.Time[seededPoints-1])
	for _, col := range [][]*float64{s.ReadRate, s.WriteRate, s.ErrorRate, s.LatencyP99} {
		require.Len(t, col, seededPoints)
		require.Nil(t, col[unreachablePoint], "an unreachable scrape is a gap, not a zero")
	}
	require.Equal(t, 59.0, *s.ReadRate[59])
	require.Equal(t, 29.5, *s.WriteRate[59])
	require.Equal(t, 0.2, *s.LatencyP99[0])
	require.Equal(t, int64(159), *s.Objects[59])
	require.Nil(t, s.Objects[unreachablePoint])
	require.Equal(t, int32(2), *s.NodesReady[0])
	require.Equal(t, int32(3), *s.NodesTotal[0])

	// Without a range, an hour.
	r = b.apiCall(t, http.MethodGet, path, ownerKey, "")
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Len(t, decodeAs[seriesJSON](t, r).Time, seededPoints)

	// The longer ranges read the rollups: the seeded hour in 5-minute
	// windows once they are rolled up (the periodic job may have begun).
	windows := b.rollUpMetrics(t, times)
	for _, rng := range []string{"24h", "7d", "30d"} {
		r = b.apiCall(t, http.MethodGet, path+"?range="+rng, ownerKey, "")
		require.Equal(t, http.StatusOK, r.status, rng+": "+r.body)
		s = decodeAs[seriesJSON](t, r)
		require.Equal(t, rng, s.Range)
		require.Len(t, s.ReadRate, len(s.Time), rng)
		require.Len(t, s.NodesTotal, len(s.Time), rng)
	}
	r = b.apiCall(t, http.MethodGet, path+"?range=24h", ownerKey, "")
	s = decodeAs[seriesJSON](t, r)
	require.Equal(t, int64(300), s.Step)
	require.Len(t, s.Time, windows, "the seeded hour in 5-minute windows")
	require.Len(t, s.ReadRate, len(s.Time))

	// A cluster without figures: empty arrays, not nulls.
	fresh := b.metricsCluster(t, ownerEmail, "unseen")
	r = b.apiCall(t, http.MethodGet, fmt.Sprintf("/api/v1/clusters/%d/metrics?range=24h", fresh.ID), ownerKey, "")
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Contains(t, r.body, `"time":[]`)
	require.Contains(t, r.body, `"read_rate":[]`)
	require.Contains(t, r.body, `"nodes_total":[]`)

	for _, bad := range []string{"2h", "1H", "all", "30d%3Bdrop"} {
		r = b.apiCall(t, http.MethodGet, path+"?range="+bad, ownerKey, "")
		require.Equal(t, http.StatusUnprocessableEntity, r.status, bad)
		e := decodeAs[apiErrorJSON](t, r).Error
		require.Equal(t, "invalid", e.Code)
		require.Equal(t, "Choose a range of 1h, 24h, 7d or 30d.", e.Message)
		require.Equal(t, e.Message, e.Fields["range"])
	}

	// Another user's key finds no such cluster, with or without a range.
	for _, p := range []string{path, path + "?range=24h"} {
		r = b.apiCall(t, http.MethodGet, p, otherKey, "")
		require.Equal(t, http.StatusNotFound, r.status, p)
		require.Equal(t, "Cluster not found", decodeAs[apiErrorJSON](t, r).Error.Message)
		require.NotContains(t, r.body, "read_rate")
	}
	requireUnauthorized(t, b.apiCall(t, http.MethodGet, path, "", ""), "no key")
	// A browser session counts for nothing on the API.
	status, _ := owner.get(path)
	require.Equal(t, http.StatusUnauthorized, status)

	// A deleted cluster's history is gone with it.
	_, err := b.pool.Exec(context.Background(), "UPDATE clusters SET status = 'deleted' WHERE id = $1", cl.ID)
	require.NoError(t, err)
	r = b.apiCall(t, http.MethodGet, path, ownerKey, "")
	require.Equal(t, http.StatusNotFound, r.status)
}

// TestClusterMetricsPage: the page and its JSON with the session, for
// the owner only; the table has the latest points, newest first, the
// unreachable one said in words; a cluster without figures yet says when
// they come; the range switch's fragment is the body alone.
func TestClusterMetricsPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner, ownerEmail := b.signedUpUser(t, "plotter")
	other, _ := b.signedUpUser(t, "snoop")
	cl := b.metricsCluster(t, ownerEmail, "plotted")
	fresh := b.metricsCluster(t, ownerEmail, "fresh")
	b.seedMetrics(t, cl.ID)
	page := fmt.Sprintf("/clusters/%d/metrics", cl.ID)

	resp, err := owner.http.Get(owner.base + page)
	require.NoError(t, err)
	body := readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Contains(t, body, "<h1>Metrics of plotted</h1>")
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
	status, js := owner.get(fmt.Sprintf("/clusters/%d/metrics.json?range=1h", cl.ID))
	require.Equal(t, http.StatusOK, status, js)
	require.Contains(t, js, `"range":"1h"`)
	status, js = owner.get(fmt.Sprintf("/clusters/%d/metrics.json?range=week", cl.ID))
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Contains(t, js, `"code":"invalid"`, "JSON for the script, not a page")

	// A range switch asks for the body alone.
	resp, frag := owner.htmx(page + "?range=24h")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, frag, "<html")
	require.Contains(t, frag, `id="cluster-metrics"`)
	require.Contains(t, frag, `data-range="24h" aria-current="page"`)
	require.Contains(t, frag, fmt.Sprintf(`data-src="/clusters/%d/metrics.json?range=24h"`, cl.ID))

	status, body = owner.get(page + "?range=forever")
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Contains(t, body, "Choose a range of 1h, 24h, 7d or 30d.")

	// A cluster without figures yet.
	status, body = owner.get(fmt.Sprintf("/clusters/%d/metrics", fresh.ID))
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Metrics appear a minute after the cluster is ready.")
	require.NotContains(t, body, `class="metrics-chart"`)

	// The cluster page links the metrics.
	_, body = owner.get(fmt.Sprintf("/clusters/%d", cl.ID))
	require.Contains(t, body, fmt.Sprintf(`href="/clusters/%d/metrics"`, cl.ID))
	require.Contains(t, body, `data-testid="cluster-metrics"`)

	// Another user: not found, page and JSON.
	for _, p := range []string{page, page + "?range=7d", fmt.Sprintf("/clusters/%d/metrics.json?range=1h", cl.ID)} {
		status, body = other.get(p)
		require.Equal(t, http.StatusNotFound, status, p)
		require.NotContains(t, body, "read_rate")
	}
	// Signed out: to the sign-in page.
	status, _ = b.client(t).get(page)
	require.Equal(t, http.StatusSeeOther, status)
}
