package views

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kubebyon/kubebyon/internal/locale"
)

// ClusterMetrics is a cluster's metrics page over one range. The charts
// are drawn in the browser (static/metrics.js) from the JSON at
// JSONPath; Rows are the same figures for a table, for screen readers
// and browsers without JavaScript.
type ClusterMetrics struct {
	Cluster Cluster
	// Range is the range shown ("1h"), Ranges those the page offers.
	Range  string
	Ranges []string
	// Points is how many points the range has (gaps included); zero
	// before the first scrape.
	Points int
	// Rows are the latest points of the range, newest first.
	Rows []MetricsRow
	// Base is the path the metrics hang under: the cluster's page
	// (/clusters/7) when empty; the admin's (/admin/clusters/7) for an
	// admin.
	Base string
}

// MetricsRow is one point of a cluster's history. A nil figure was not
// measured; a row without any is a time the control plane was not
// reached.
type MetricsRow struct {
	Time time.Time
	// Requests per second by kind, and 5xx answers per second.
	Read, Write, Watch, Errors *float64
	// Latency quantiles in seconds.
	P50, P99               *float64
	Objects                *int64
	NodesReady, NodesTotal *int32
}

// reached reports whether anything was measured at the row's time.
func (r MetricsRow) reached() bool {
	return r.Read != nil || r.Write != nil || r.Watch != nil || r.Errors != nil ||
		r.P50 != nil || r.P99 != nil || r.Objects != nil || r.NodesReady != nil || r.NodesTotal != nil
}

// metricsChart is one chart of the page: the series it draws (by their
// names in the JSON) under a heading.
type metricsChart struct {
	// Name is the chart's id on the page.
	Name string
	// Title is the catalog message of its heading.
	Title  string
	Series []metricsSeries
	// Scale multiplies the JSON's values for display (seconds to ms).
	Scale float64
}

// metricsSeries is one line of a chart: its field in the JSON and the
// catalog message of its label.
type metricsSeries struct {
	Key, Label string
}

// metricsCharts are the charts, in page order.
var metricsCharts = []metricsChart{
	{Name: "requests", Title: "ClusterMetricsRequests", Scale: 1, Series: []metricsSeries{
		{"read_rate", "ClusterMetricsSeriesRead"}, {"write_rate", "ClusterMetricsSeriesWrite"}, {"watch_rate", "ClusterMetricsSeriesWatch"},
	}},
	{Name: "errors", Title: "ClusterMetricsErrors", Scale: 1, Series: []metricsSeries{{"error_rate", "ClusterMetricsSeries5xx"}}},
	{Name: "latency", Title: "ClusterMetricsLatency", Scale: 1000, Series: []metricsSeries{
		{"latency_p50", "ClusterMetricsSeriesP50"}, {"latency_p99", "ClusterMetricsSeriesP99"},
	}},
	{Name: "objects", Title: "ClusterMetricsObjects", Scale: 1, Series: []metricsSeries{{"objects", "ClusterMetricsSeriesObjects"}}},
	{Name: "nodes", Title: "ClusterMetricsNodes", Scale: 1, Series: []metricsSeries{
		{"nodes_ready", "ClusterMetricsSeriesReady"}, {"nodes_total", "ClusterMetricsSeriesTotal"},
	}},
}

// metricsSeriesAttr is a chart's series for the script: JSON keys and
// translated labels.
func metricsSeriesAttr(ctx context.Context, c metricsChart) string {
	type series struct {
		Key   string `json:"key"`
		Label string `json:"label"`
	}
	out := make([]series, len(c.Series))
	for i, s := range c.Series {
		out[i] = series{Key: s.Key, Label: locale.T(ctx, s.Label)}
	}
	b, _ := json.Marshal(out) // strings only: cannot fail
	return string(b)
}

// path is the page over a range; jsonPath the figures the script draws.
func (m ClusterMetrics) path(r string) string {
	return m.base() + "/metrics?range=" + r
}

func (m ClusterMetrics) jsonPath(r string) string {
	return m.base() + "/metrics.json?range=" + r
}

func (m ClusterMetrics) base() string {
	if m.Base != "" {
		return m.Base
	}
	return clusterPath(m.Cluster.ID, "")
}

// metricsRangeMsg is the catalog message naming a range.
func metricsRangeMsg(r string) string {
	return "ClusterMetricsRange" + r
}

// metricsFigure shows a rate or a latency with the precision its size
// deserves, without trailing zeros; a dash when it was not measured.
func metricsFigure(v *float64, scale float64) string {
	if v == nil {
		return "—"
	}
	f := *v * scale
	prec := 2
	switch a := math.Abs(f); {
	case a >= 100:
		prec = 0
	case a >= 10:
		prec = 1
	case a > 0 && a < 0.01:
		prec = 4
	}
	s := strconv.FormatFloat(f, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func metricsCount(v *int64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatInt(*v, 10)
}

// metricsNodes is "ready/total".
func metricsNodes(ready, total *int32) string {
	n := func(v *int32) string {
		if v == nil {
			return "—"
		}
		return strconv.Itoa(int(*v))
	}
	return n(ready) + "/" + n(total)
}
