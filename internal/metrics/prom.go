package metrics

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"

	"github.com/kubebyon/kubebyon/queries"
)

// Prom keeps the samples in a Prometheus-compatible time-series database
// (VictoriaMetrics, or Prometheus run with
// --web.enable-remote-write-receiver): written with remote write 1.0, read
// with PromQL. Each figure of a sample is a gauge
// kubebyon_controlplane_<figure>{cluster_id="…"} (latency in seconds, as
// kubebyon_controlplane_latency_p99_seconds), the objects per resource
// kubebyon_controlplane_objects_by_resource{resource="…"}, and every scrape
// writes kubebyon_controlplane_up, 1 or 0. The database's retention takes
// the place of the rollups and partitions: Read sums the steps up when it
// asks.
type Prom struct {
	// WriteURL is the remote write endpoint, such as
	// http://vm:8428/api/v1/write.
	WriteURL string
	// QueryURL is the base of the Prometheus HTTP API, such as
	// http://vm:8428 (the client adds /api/v1/query_range).
	QueryURL string
	// Client makes the requests; nil is one with a 30-second timeout.
	Client *http.Client
}

// promPrefix starts the name of every metric Prom writes.
const promPrefix = "kubebyon_controlplane_"

// promErrorBody is how much of a refused write's answer its error quotes.
const promErrorBody = 200

// promFigure is a figure of Sample as a gauge: its name after promPrefix,
// the function that sums a step of Read up as the PostgreSQL rollups do
// (rates and p50 averaged, p99 and inflight the worst, counts the last),
// its value in a sample and where it goes in a row of Read.
type promFigure struct {
	name  string
	over  string
	value func(*Sample) (float64, bool)
	set   func(*promRow, float64)
}

// promRow is a step of Read, laid out by toSeries as PG's rows are.
type promRow = queries.ClusterMetricsRawRow

var promFigures = []promFigure{
	{"read_rate", "avg_over_time", promFloat(func(s *Sample) *float64 { return s.ReadRate }), func(r *promRow, v float64) { r.ReadRate = f4(&v) }},
	{"write_rate", "avg_over_time", promFloat(func(s *Sample) *float64 { return s.WriteRate }), func(r *promRow, v float64) { r.WriteRate = f4(&v) }},
	{"watch_rate", "avg_over_time", promFloat(func(s *Sample) *float64 { return s.WatchRate }), func(r *promRow, v float64) { r.WatchRate = f4(&v) }},
	{"error_rate", "avg_over_time", promFloat(func(s *Sample) *float64 { return s.ErrorRate }), func(r *promRow, v float64) { r.ErrorRate = f4(&v) }},
	{"latency_p50_seconds", "avg_over_time", promFloat(func(s *Sample) *float64 { return s.LatencyP50 }), func(r *promRow, v float64) { r.LatencyP50 = f4(&v) }},
	{"latency_p99_seconds", "max_over_time", promFloat(func(s *Sample) *float64 { return s.LatencyP99 }), func(r *promRow, v float64) { r.LatencyP99 = f4(&v) }},
	{"inflight", "max_over_time", promFloat(func(s *Sample) *float64 { return s.Inflight }), func(r *promRow, v float64) { r.Inflight = f4(&v) }},
	{"objects", "last_over_time", promInt(func(s *Sample) *int64 { return s.Objects }), func(r *promRow, v float64) { r.Objects = promInt8(v) }},
	{"watches", "last_over_time", promInt(func(s *Sample) *int64 { return s.Watches }), func(r *promRow, v float64) { r.Watches = promInt8(v) }},
	{"nodes_ready", "last_over_time", promInt(func(s *Sample) *int32 { return s.NodesReady }), func(r *promRow, v float64) { r.NodesReady = promInt4(v) }},
	{"nodes_total", "last_over_time", promInt(func(s *Sample) *int32 { return s.NodesTotal }), func(r *promRow, v float64) { r.NodesTotal = promInt4(v) }},
	{"pods_running", "last_over_time", promInt(func(s *Sample) *int32 { return s.PodsRunning }), func(r *promRow, v float64) { r.PodsRunning = promInt4(v) }},
	{"pods_total", "last_over_time", promInt(func(s *Sample) *int32 { return s.PodsTotal }), func(r *promRow, v float64) { r.PodsTotal = promInt4(v) }},
}

func promFloat(field func(*Sample) *float64) func(*Sample) (float64, bool) {
	return func(s *Sample) (float64, bool) {
		v := field(s)
		if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
			return 0, false
		}
		return *v, true
	}
}

func promInt[T int32 | int64](field func(*Sample) *T) func(*Sample) (float64, bool) {
	return func(s *Sample) (float64, bool) {
		v := field(s)
		if v == nil {
			return 0, false
		}
		return float64(*v), true
	}
}

func promInt8(v float64) pgtype.Int8 { return pgtype.Int8{Int64: int64(math.Round(v)), Valid: true} }
func promInt4(v float64) pgtype.Int4 { return pgtype.Int4{Int32: int32(math.Round(v)), Valid: true} }

// Write implements Backend with one remote write request. A 5xx or 429
// answer or a failed connection is retried twice within a second or so;
// past that the sample is lost (a gap), as the next scrape comes soon.
func (p Prom) Write(ctx context.Context, clusterID int64, smp Sample) error {
	id := strconv.FormatInt(clusterID, 10)
	at := smp.At.UnixMilli()
	var req prompb.WriteRequest
	// Labels go in name order, as remote write asks.
	add := func(name string, v float64, extra ...prompb.Label) {
		labels := append([]prompb.Label{{Name: model.MetricNameLabel, Value: promPrefix + name}, {Name: "cluster_id", Value: id}}, extra...)
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: labels, Samples: []prompb.Sample{{Value: v, Timestamp: at}}})
	}
	up := 0.0
	if smp.Up {
		up = 1
	}
	add("up", up)
	if smp.Up {
		for _, f := range promFigures {
			if v, ok := f.value(&smp); ok {
				add(f.name, v)
			}
		}
		for resource, n := range smp.ByResource {
			add("objects_by_resource", float64(n), prompb.Label{Name: "resource", Value: resource})
		}
	}

	c := *p.client()
	c.Transport = limitErrorBody{next: cmp.Or(c.Transport, http.DefaultTransport)}
	w, err := remote.NewAPI(p.WriteURL,
		remote.WithAPIPath(""), // WriteURL is the endpoint itself
		remote.WithAPIHTTPClient(&c),
		remote.WithAPIBackoff(remote.BackoffConfig{Min: 100 * time.Millisecond, Max: time.Second, MaxRetries: 2}),
	)
	if err != nil {
		return fmt.Errorf("metrics remote write %s: %w", p.WriteURL, err)
	}
	if _, err := w.Write(ctx, remote.WriteV1MessageType, &req); err != nil {
		return fmt.Errorf("write metrics of cluster %d: %w", clusterID, err)
	}
	return nil
}

// limitErrorBody cuts the answer to a failed request to its first
// promErrorBody bytes: the remote write client quotes the whole of it in
// its error, which could be a page of HTML.
type limitErrorBody struct{ next http.RoundTripper }

func (l limitErrorBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil || resp.StatusCode/100 == 2 {
		return resp, err
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.LimitReader(resp.Body, promErrorBody), resp.Body}
	return resp, nil
}

func (p Prom) client() *http.Client {
	if p.Client != nil {
		return p.Client
	}
	return &http.Client{Timeout: 30 * time.Second}
}

func (p Prom) queryAPI() (promv1.API, error) {
	c, err := api.NewClient(api.Config{Address: p.QueryURL, Client: p.client()})
	if err != nil {
		return nil, fmt.Errorf("metrics query API %s: %w", p.QueryURL, err)
	}
	return promv1.NewAPI(c), nil
}

// promOver is a PromQL expression of fn over each series of a figure in
// window, labelled figure="<name>" so that several figures can share an
// answer: a *_over_time function drops the metric name, and the figures
// of a cluster would then all look alike (Prometheus refuses such an
// answer; VictoriaMetrics' keep_metric_names is not PromQL).
func promOver(fn, figure, selector, window, offset string) string {
	return fmt.Sprintf(`label_replace(%s(%s%s%s[%s]%s), "figure", %q, "cluster_id", ".*")`,
		fn, promPrefix, figure, selector, window, offset, figure)
}

// promDuration is d in PromQL, in milliseconds, which Prometheus and
// VictoriaMetrics read alike.
func promDuration(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }

// promAlign is t rounded down to a multiple of step since the epoch, as
// date_bin does for the rollups and VictoriaMetrics for its query steps.
func promAlign(t time.Time, step time.Duration) time.Time {
	ms, s := t.UnixMilli(), step.Milliseconds()
	return time.UnixMilli(ms - ((ms%s)+s)%s).UTC()
}

// Read implements Backend with one range query. The point of a step at T
// sums up the samples of [T, T+step), as the rollups do: each window is
// moved forward by an offset of a step less a millisecond (a PromQL
// window (T-step, T] would shift a sample taken on the minute into the
// step before). A step whose scrapes all failed is a null; gaps of more
// than two steps get one, as with PG.
func (p Prom) Read(ctx context.Context, clusterID int64, r Range, now time.Time, interval time.Duration) (Series, error) {
	step := interval
	switch r {
	case Range1h:
	case Range24h:
		step = fiveMinutes
	default:
		step = time.Hour
	}
	selector := fmt.Sprintf(`{cluster_id="%d"}`, clusterID)
	window, offset := promDuration(step), " offset -"+promDuration(step-time.Millisecond)
	parts := []string{promOver("max_over_time", "up", selector, window, offset)}
	for _, f := range promFigures {
		parts = append(parts, promOver(f.over, f.name, selector, window, offset))
	}
	qa, err := p.queryAPI()
	if err != nil {
		return Series{}, err
	}
	v, _, _, err := qa.QueryRange(ctx, strings.Join(parts, " or "), promv1.Range{
		Start: promAlign(now.Add(-r.Duration()), step), End: promAlign(now, step), Step: step,
	})
	if err != nil {
		return Series{}, fmt.Errorf("read metrics of cluster %d: %w", clusterID, err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return Series{}, fmt.Errorf("read metrics of cluster %d: a %s, not a matrix", clusterID, v.Type())
	}

	set := make(map[string]func(*promRow, float64), len(promFigures))
	for _, f := range promFigures {
		set[f.name] = f.set
	}
	up := map[model.Time]bool{}
	rows := map[model.Time]*promRow{}
	for _, ss := range m {
		figure := string(ss.Metric["figure"])
		for _, pt := range ss.Values {
			if figure == "up" {
				up[pt.Timestamp] = float64(pt.Value) >= 1
				continue
			}
			if f := set[figure]; f != nil {
				if rows[pt.Timestamp] == nil {
					rows[pt.Timestamp] = &promRow{}
				}
				f(rows[pt.Timestamp], float64(pt.Value))
			}
		}
	}
	out := make([]promRow, 0, len(up))
	for t, ok := range up {
		row := promRow{}
		if ok && rows[t] != nil {
			row = *rows[t]
		}
		row.At = ts(t.Time())
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b promRow) int { return a.At.Time.Compare(b.At.Time) })
	return toSeries(r, step, out), nil
}

// Window implements Backend with the raw samples (an instant query of a
// range vector).
func (p Prom) Window(ctx context.Context, clusterID int64, since, now time.Time) ([]WindowPoint, error) {
	if since.After(now) {
		return nil, nil
	}
	qa, err := p.queryAPI()
	if err != nil {
		return nil, err
	}
	// A range vector leaves its start out: a millisecond more takes since in.
	query := fmt.Sprintf(`{__name__=~"%s(up|error_rate|latency_p99_seconds)",cluster_id="%d"}[%s]`,
		promPrefix, clusterID, promDuration(now.Sub(since)+time.Millisecond))
	v, _, _, err := qa.Query(ctx, query, now)
	if err != nil {
		return nil, fmt.Errorf("metrics of cluster %d for alerts: %w", clusterID, err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("metrics of cluster %d for alerts: a %s, not a matrix", clusterID, v.Type())
	}
	type scrape struct {
		up             bool
		errors, p99    float64
		hasErr, hasP99 bool
	}
	scrapes := map[model.Time]*scrape{}
	for _, ss := range m {
		name := strings.TrimPrefix(string(ss.Metric[model.MetricNameLabel]), promPrefix)
		for _, pt := range ss.Values {
			s := scrapes[pt.Timestamp]
			if s == nil {
				s = &scrape{}
				scrapes[pt.Timestamp] = s
			}
			switch v := float64(pt.Value); name {
			case "up":
				s.up = v >= 1
			case "error_rate":
				s.errors, s.hasErr = v, true
			case "latency_p99_seconds":
				s.p99, s.hasP99 = v, true
			}
		}
	}
	var out []WindowPoint
	for t, s := range scrapes {
		if !s.up {
			continue
		}
		pt := WindowPoint{At: t.Time().UTC()}
		if s.hasErr {
			pt.ErrorRate = &s.errors
		}
		if s.hasP99 {
			pt.LatencyP99 = &s.p99
		}
		out = append(out, pt)
	}
	slices.SortFunc(out, func(a, b WindowPoint) int { return a.At.Compare(b.At) })
	return out, nil
}

// Top implements Backend with one instant query of every cluster's
// figures over [since, now], ranked here: topk would break ties at
// random, and requests are averaged over the successful scrapes as
// PostgreSQL does (sums over the count of up samples).
func (p Prom) Top(ctx context.Context, by TopOrder, since, now time.Time, n int) ([]TopCluster, error) {
	if n <= 0 || since.After(now) {
		return nil, nil
	}
	qa, err := p.queryAPI()
	if err != nil {
		return nil, err
	}
	window := promDuration(now.Sub(since) + time.Millisecond)
	query := strings.Join([]string{
		promOver("sum_over_time", "up", "", window, ""),
		promOver("sum_over_time", "read_rate", "", window, ""),
		promOver("sum_over_time", "write_rate", "", window, ""),
		promOver("sum_over_time", "watch_rate", "", window, ""),
		promOver("avg_over_time", "error_rate", "", window, ""),
		promOver("max_over_time", "latency_p99_seconds", "", window, ""),
	}, " or ")
	v, _, _, err := qa.Query(ctx, query, now)
	if err != nil {
		return nil, fmt.Errorf("rank control planes: %w", err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("rank control planes: a %s, not a vector", v.Type())
	}
	type figures struct {
		up, requests float64
		TopCluster
	}
	clusters := map[int64]*figures{}
	for _, s := range vec {
		id, err := strconv.ParseInt(string(s.Metric["cluster_id"]), 10, 64)
		if err != nil {
			continue
		}
		c := clusters[id]
		if c == nil {
			c = &figures{TopCluster: TopCluster{ClusterID: id}}
			clusters[id] = c
		}
		switch v := float64(s.Value); string(s.Metric["figure"]) {
		case "up":
			c.up = v
		case "read_rate", "write_rate", "watch_rate":
			c.requests += v
		case "error_rate":
			c.Errors = v
		case "latency_p99_seconds":
			c.P99 = v
		}
	}
	var out []TopCluster
	for _, c := range clusters {
		if c.up < 1 || (by == TopErrors && !(c.Errors > 0)) {
			continue
		}
		c.Requests = c.requests / c.up
		out = append(out, c.TopCluster)
	}
	key := func(c TopCluster) float64 {
		if by == TopErrors {
			return c.Errors
		}
		return c.Requests
	}
	slices.SortFunc(out, func(a, b TopCluster) int {
		return cmp.Or(cmp.Compare(key(b), key(a)), cmp.Compare(a.ClusterID, b.ClusterID))
	})
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}
