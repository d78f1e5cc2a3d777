// Package metrics collects, keeps and reads the history of each cluster's
// control plane: a check job per ready cluster (package checks paces it,
// checks.MetricsScrape) scrapes the virtual apiserver's /metrics and counts its
// nodes and pods; Derive turns two scrapes into one interval's Sample;
// the samples are stored in PostgreSQL tables partitioned by day or month
// (raw, 5-minute and hourly rollups), rolled up and pruned by a periodic
// job (MaintainArgs) that drops whole partitions; Series reads them for
// the charts.
package metrics

import (
	"time"

	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/checks"
)

// ScrapeArgs asks for one scrape of a cluster (jobs.MetricsScrapeWorker).
type ScrapeArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (ScrapeArgs) Kind() string { return "metrics_scrape" }

// InsertOpts implements river.JobArgsWithInsertOpts: in the checks queue,
// one per cluster waiting at most, not retried by River (the check comes
// due again, sooner while it fails).
func (ScrapeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: checks.Queue, MaxAttempts: 1, UniqueOpts: checks.UniqueWhileWaiting()}
}

// MaintainArgs is the periodic job that creates the partitions ahead,
// rolls the samples up and drops the partitions past their retention
// (jobs.MetricsMaintainWorker).
type MaintainArgs struct{}

// Kind implements river.JobArgs.
func (MaintainArgs) Kind() string { return "metrics_maintain" }

// InsertOpts implements river.JobArgsWithInsertOpts: one at a time, not
// retried (the next tick comes soon).
func (MaintainArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, UniqueOpts: checks.UniqueWhileWaiting()}
}

// Sample is what one scrape interval of a cluster's control plane shows.
// A nil field is unknown: a gap in the chart, never a zero.
type Sample struct {
	At time.Time
	// Up is false for a scrape that could not reach the control plane:
	// every other field is then nil.
	Up bool
	// Requests per second over the interval by verb class: reads (GET,
	// LIST), writes (POST, PUT, PATCH, APPLY, DELETE, DELETECOLLECTION)
	// and watches (the apiserver counts a WATCH when it ends; in a steady
	// state as many start).
	ReadRate, WriteRate, WatchRate *float64
	// ErrorRate is 5xx answers per second over the interval.
	ErrorRate *float64
	// LatencyP50 and LatencyP99 are request latency quantiles in seconds
	// over the interval (from the histogram's bucket deltas; watches and
	// other long-running requests are not counted), nil when no request
	// finished in it.
	LatencyP50, LatencyP99 *float64
	// Inflight is the most requests served at once in the second before
	// the scrape (read-only and mutating together).
	Inflight *float64
	// Objects is the objects stored, all resources together; ByResource
	// the same per resource ("pods", "configmaps", "deployments.apps").
	Objects    *int64
	ByResource map[string]int64
	// Watches is the watch requests open when scraped.
	Watches *int64
	// Nodes and Pods from the cluster's API.
	NodesReady, NodesTotal, PodsRunning, PodsTotal *int32
}

// Range is a span of history the charts show.
type Range string

// The ranges, and the resolution each is read at.
const (
	Range1h  Range = "1h"
	Range24h Range = "24h"
	Range7d  Range = "7d"
	Range30d Range = "30d"
)

// Ranges are the ranges in the order the page offers them.
var Ranges = []Range{Range1h, Range24h, Range7d, Range30d}

// ParseRange is the range named, or false.
func ParseRange(s string) (Range, bool) {
	for _, r := range Ranges {
		if string(r) == s {
			return r, true
		}
	}
	return "", false
}

// Duration is how far back the range reaches.
func (r Range) Duration() time.Duration {
	switch r {
	case Range24h:
		return 24 * time.Hour
	case Range7d:
		return 7 * 24 * time.Hour
	case Range30d:
		return 30 * 24 * time.Hour
	}
	return time.Hour
}

// Series is a cluster's history over a range, one slice per figure, all
// as long as Time (unix seconds); a null (nil) is a gap. Step is the
// resolution in seconds: the scrape interval for raw samples, else the
// rollup's.
type Series struct {
	Range       Range      `json:"range"`
	Step        int64      `json:"step"`
	Time        []int64    `json:"time"`
	ReadRate    []*float64 `json:"read_rate"`
	WriteRate   []*float64 `json:"write_rate"`
	WatchRate   []*float64 `json:"watch_rate"`
	ErrorRate   []*float64 `json:"error_rate"`
	LatencyP50  []*float64 `json:"latency_p50"`
	LatencyP99  []*float64 `json:"latency_p99"`
	Inflight    []*float64 `json:"inflight"`
	Objects     []*int64   `json:"objects"`
	Watches     []*int64   `json:"watches"`
	NodesReady  []*int32   `json:"nodes_ready"`
	NodesTotal  []*int32   `json:"nodes_total"`
	PodsRunning []*int32   `json:"pods_running"`
	PodsTotal   []*int32   `json:"pods_total"`
}
