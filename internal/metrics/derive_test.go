package metrics_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/metrics"
)

// bounds are the apiserver's request-duration buckets, shortened.
var bounds = []float64{0.1, 0.2, 0.4, 1}

// counters is a scrape with the given cumulative counts.
func counters(start, reads, writes, watches, errors float64, counts []uint64, total uint64) metrics.Counters {
	return metrics.Counters{
		Start: start, Reads: reads, Writes: writes, WatchRequests: watches, Errors: errors,
		Latency:  metrics.Histogram{Bounds: bounds, Counts: counts, Count: total},
		Inflight: 2, OpenWatches: 7,
		Objects: map[string]int64{"pods": 30, "configmaps": 12, "deployments.apps": 4},
	}
}

func TestDerive(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	t1 := t0.Add(10 * time.Second)
	prev := counters(1000, 100, 50, 4, 2, []uint64{10, 20, 30, 40}, 40)
	for _, tc := range []struct {
		name string
		prev *metrics.Counters
		at   time.Time
		cur  metrics.Counters
		// The rates (read, write, watch, error), the latencies (p50, p99);
		// nil for none.
		rates     []float64
		latencies []float64
	}{{
		name: "first scrape: gauges only",
		prev: nil, at: t1,
		cur: prev,
	}, {
		name: "steady: deltas over 10 s",
		prev: &prev, at: t1,
		// 100 requests in the interval: 50 under 0.1 s, 40 in (0.1, 0.2],
		// 10 in (0.2, 0.4]. p50 is the end of the first bucket; p99 is
		// 9/10 of the way through the third.
		cur:       counters(1000, 130, 60, 5, 2, []uint64{60, 110, 130, 140}, 140),
		rates:     []float64{3, 1, 0.1, 0},
		latencies: []float64{0.1, 0.2 + 0.2*9/10},
	}, {
		name: "no request finished: no latency",
		prev: &prev, at: t1,
		cur:   counters(1000, 100, 50, 6, 2, []uint64{10, 20, 30, 40}, 40),
		rates: []float64{0, 0, 0.2, 0},
	}, {
		name: "slowest in +Inf: the highest finite bound",
		prev: &prev, at: t1,
		// 10 requests, all over 1 s.
		cur:       counters(1000, 110, 50, 4, 2, []uint64{10, 20, 30, 40}, 50),
		rates:     []float64{1, 0, 0, 0},
		latencies: []float64{1, 1},
	}, {
		name: "restart, counters below prev: counted from zero",
		prev: &prev, at: t1,
		cur:       counters(2000, 20, 10, 0, 1, []uint64{10, 10, 10, 10}, 10),
		rates:     []float64{2, 1, 0, 0.1},
		latencies: []float64{0.05, 0.099},
	}, {
		name: "restart, counters above prev: the new start time tells",
		prev: &prev, at: t1,
		cur:       counters(2000, 150, 60, 4, 3, []uint64{100, 100, 100, 100}, 100),
		rates:     []float64{15, 6, 0.4, 0.3},
		latencies: []float64{0.05, 0.099},
	}, {
		name: "counter reset without a start time: counted from zero",
		prev: func() *metrics.Counters { p := prev; p.Start = 0; return &p }(), at: t1,
		cur:       counters(0, 30, 60, 4, 2, []uint64{10, 20, 30, 40}, 40),
		rates:     []float64{3, 1, 0, 0},
		latencies: nil,
	}, {
		name: "histogram reset alone: its current buckets",
		prev: &prev, at: t1,
		cur:       counters(1000, 100, 50, 4, 2, []uint64{0, 10, 10, 10}, 10),
		rates:     []float64{0, 0, 0, 0},
		latencies: []float64{0.15, 0.1 + 0.1*9.9/10},
	}, {
		name: "clock went back: no rates",
		prev: &prev, at: t0.Add(-time.Second),
		cur: counters(1000, 130, 60, 5, 2, []uint64{60, 110, 130, 140}, 140),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := metrics.Derive(tc.prev, t0, tc.cur, tc.at)
			require.True(t, s.Up)
			require.Equal(t, tc.at, s.At)
			require.Equal(t, 2.0, *s.Inflight)
			require.Equal(t, int64(7), *s.Watches)
			require.Equal(t, int64(46), *s.Objects)
			require.Equal(t, map[string]int64{"pods": 30, "configmaps": 12, "deployments.apps": 4}, s.ByResource)
			requireFloats(t, "rates", tc.rates, s.ReadRate, s.WriteRate, s.WatchRate, s.ErrorRate)
			requireFloats(t, "latencies", tc.latencies, s.LatencyP50, s.LatencyP99)
		})
	}
}

// requireFloats requires got to be want, or all nil for want nil.
func requireFloats(t *testing.T, what string, want []float64, got ...*float64) {
	t.Helper()
	for i, g := range got {
		if want == nil {
			require.Nil(t, g, "%s[%d]", what, i)
			continue
		}
		require.NotNil(t, g, "%s[%d]", what, i)
		require.InDelta(t, want[i], *g, 1e-9, "%s[%d]", what, i)
	}
}

// TestDeriveObjects keeps the 50 largest resources in ByResource, counts
// them all in Objects, leaves the total unknown when a resource could not
// be counted, and both unknown when the apiserver does not count objects.
func TestDeriveObjects(t *testing.T) {
	t.Parallel()
	at := time.Now()
	many := map[string]int64{}
	var total int64
	for i := range 80 {
		many[fmt.Sprintf("r%02d.example.com", i)] = int64(i + 1)
		total += int64(i + 1)
	}
	s := metrics.Derive(nil, time.Time{}, metrics.Counters{Objects: many}, at)
	require.Equal(t, total, *s.Objects)
	require.Len(t, s.ByResource, 50)
	require.Equal(t, int64(80), s.ByResource["r79.example.com"])
	require.Equal(t, int64(31), s.ByResource["r30.example.com"])
	require.NotContains(t, s.ByResource, "r29.example.com")

	s = metrics.Derive(nil, time.Time{}, metrics.Counters{Objects: map[string]int64{"pods": 3, "secrets": -1}}, at)
	require.Nil(t, s.Objects, "secrets not counted: the total is unknown")
	require.Equal(t, map[string]int64{"pods": 3}, s.ByResource)

	s = metrics.Derive(nil, time.Time{}, metrics.Counters{}, at)
	require.Nil(t, s.Objects)
	require.Nil(t, s.ByResource)
}

// TestCountersJSON keeps the counters the same through the JSON they are
// kept in between scrapes, and small.
func TestCountersJSON(t *testing.T) {
	t.Parallel()
	c := counters(1000, 100, 50, 4, 2, []uint64{10, 20, 30, 40}, 40)
	b, err := json.Marshal(c)
	require.NoError(t, err)
	var back metrics.Counters
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, c, back)
	require.Less(t, len(b), 400)
}
