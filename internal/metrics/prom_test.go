package metrics_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// promBundle is a Prom on a VictoriaMetrics of the test's own.
type promBundle struct {
	vm   string
	prom metrics.Prom
	// now is a whole hour: the steps of every range fall on it.
	now time.Time
}

func promSetup(t *testing.T) promBundle {
	t.Helper()
	vm := testenv.VictoriaMetrics(t)
	return promBundle{
		vm:   vm,
		prom: metrics.Prom{WriteURL: vm + "/api/v1/write", QueryURL: vm},
		now:  time.Now().UTC().Truncate(time.Hour),
	}
}

// write stores the samples of a cluster and makes them searchable.
func (b promBundle) write(t *testing.T, clusterID int64, samples ...metrics.Sample) {
	t.Helper()
	for _, smp := range samples {
		require.NoError(t, b.prom.Write(context.Background(), clusterID, smp))
	}
	b.flush(t)
}

// flush makes what VictoriaMetrics was sent searchable.
func (b promBundle) flush(t *testing.T) {
	t.Helper()
	testenv.FlushVictoriaMetrics(t, b.vm)
}

func pv[T any](v T) *T { return &v }

// promUp is a successful scrape with read rate r (writes half of it,
// watches none), p99 p and o objects; 5xx a second e.
func promUp(at time.Time, r, p, e float64, o int64) metrics.Sample {
	return metrics.Sample{
		At: at, Up: true, ReadRate: pv(r), WriteRate: pv(r / 2), WatchRate: pv(0.0), ErrorRate: pv(e),
		LatencyP50: pv(p / 4), LatencyP99: pv(p), Inflight: pv(r + 1), Objects: pv(o), Watches: pv(int64(3)),
		NodesReady: pv(int32(2)), NodesTotal: pv(int32(3)), PodsRunning: pv(int32(o % 7)), PodsTotal: pv(int32(6)),
		ByResource: map[string]int64{"configmaps": o},
	}
}

// index is where t is in the series' times, or -1.
func index(s metrics.Series, t time.Time) int {
	for i, at := range s.Time {
		if at == t.Unix() {
			return i
		}
	}
	return -1
}

// TestPromRead writes two clusters' scrapes over a month and reads one of
// them back at each range's resolution: averages, worst and last per
// step, failed scrapes and stops as nulls, the other cluster never mixed
// in.
func TestPromRead(t *testing.T) {
	t.Parallel()
	b := promSetup(t)
	const cluster, other = 7, 8
	now := b.now

	var samples []metrics.Sample
	// The last hour, a scrape a minute: 0..9 up, 10 and 11 unreachable,
	// 12..19 up, nothing for 20..29 (the platform stopped), 30..39 up.
	hourStart := now.Add(-40 * time.Minute)
	for i := range 40 {
		at := hourStart.Add(time.Duration(i) * time.Minute)
		switch {
		case i == 10 || i == 11:
			samples = append(samples, metrics.Sample{At: at})
		case i >= 20 && i < 30:
		default:
			samples = append(samples, promUp(at, float64(i), 0.1, 0, int64(100+i)))
		}
	}
	// Three hours ago, one 5-minute window of five scrapes and a failed
	// one, a window of failed scrapes only, then one scrape.
	w := now.Add(-3 * time.Hour)
	for i := range 5 {
		samples = append(samples, promUp(w.Add(time.Duration(i)*time.Minute), float64(i), float64(i)/100, 0.1*float64(i%2+1), int64(i)))
	}
	samples = append(samples, metrics.Sample{At: w.Add(4*time.Minute + 30*time.Second)},
		metrics.Sample{At: w.Add(5 * time.Minute)}, metrics.Sample{At: w.Add(7 * time.Minute)},
		promUp(w.Add(10*time.Minute+59*time.Second), 50, 1, 0, 50))
	// Three days ago, an hour of three scrapes and a failed one.
	h := now.Add(-72 * time.Hour)
	samples = append(samples,
		promUp(h, 3, 0.1, 0, 7), promUp(h.Add(20*time.Minute), 6, 0.3, 0, 8),
		promUp(h.Add(40*time.Minute), 9, 0.2, 0, 9), metrics.Sample{At: h.Add(50 * time.Minute)})
	// Twenty days ago, one scrape.
	d := now.Add(-20 * 24 * time.Hour)
	samples = append(samples, promUp(d.Add(30*time.Minute), 12, 2, 0, 12))
	b.write(t, cluster, samples...)
	// The other cluster: much higher figures at the same times.
	for i := range samples {
		samples[i] = promUp(samples[i].At, 1e4, 1e4, 1e4, 1e4)
	}
	b.write(t, other, samples...)

	ctx := context.Background()
	for _, tc := range []struct {
		r     metrics.Range
		step  int64
		check func(t *testing.T, s metrics.Series)
	}{
		{metrics.Range1h, 60, func(t *testing.T, s metrics.Series) {
			// Every scrape on its minute, and one null where the platform
			// stopped.
			require.Len(t, s.Time, 20+1+10)
			require.Equal(t, hourStart.Unix(), s.Time[0])
			require.InDelta(t, 0.0, *s.ReadRate[0], 1e-9)
			require.InDelta(t, 0.1, *s.LatencyP99[0], 0, "rounded as PG reads it")
			require.InDelta(t, 4.5, *s.WriteRate[9], 1e-9)
			require.Nil(t, s.ReadRate[10], "unreachable: a gap")
			require.Nil(t, s.Objects[11])
			require.Equal(t, int64(112), *s.Objects[12])
			require.Equal(t, hourStart.Add(20*time.Minute).Unix(), s.Time[20], "the null follows the last scrape before the stop by a step")
			require.Nil(t, s.ReadRate[20])
			require.Equal(t, int64(130), *s.Objects[21])
			require.Equal(t, int32(130%7), *s.PodsRunning[21])
			require.Equal(t, hourStart.Add(39*time.Minute).Unix(), s.Time[30])
		}},
		{metrics.Range24h, 300, func(t *testing.T, s metrics.Series) {
			i := index(s, w)
			require.Equal(t, 0, i, "nothing before three hours ago")
			require.InDelta(t, 2.0, *s.ReadRate[i], 1e-9, "rates averaged: (0+1+2+3+4)/5")
			require.InDelta(t, 1.0, *s.WriteRate[i], 1e-9)
			require.InDelta(t, 0.14, *s.ErrorRate[i], 0, "(0.1+0.2+0.1+0.2+0.1)/5, rounded")
			require.InDelta(t, 0.005, *s.LatencyP50[i], 1e-9)
			require.InDelta(t, 0.04, *s.LatencyP99[i], 1e-9, "p99: the worst")
			require.InDelta(t, 5.0, *s.Inflight[i], 1e-9, "inflight: the worst")
			require.Equal(t, int64(4), *s.Objects[i], "counts: the last")
			require.Equal(t, int64(3), *s.Watches[i])
			require.Equal(t, int32(2), *s.NodesReady[i])
			require.Equal(t, int32(3), *s.NodesTotal[i])
			require.Equal(t, int32(6), *s.PodsTotal[i])
			require.Equal(t, w.Add(5*time.Minute).Unix(), s.Time[1], "a window of failed scrapes only")
			require.Nil(t, s.ReadRate[1])
			require.Equal(t, w.Add(10*time.Minute).Unix(), s.Time[2], "a scrape at 10:59 is in the window of 10:00")
			require.Equal(t, int64(50), *s.Objects[2])
			require.Equal(t, w.Add(15*time.Minute).Unix(), s.Time[3], "then the stop until the last hour")
			require.Nil(t, s.Objects[3])
			i = index(s, hourStart.Add(10*time.Minute))
			require.Positive(t, i)
			require.InDelta(t, 13.0, *s.ReadRate[i], 1e-9, "failed scrapes are not averaged in: (12+13+14)/3")
			require.Equal(t, int64(114), *s.Objects[i])
			require.Equal(t, hourStart.Add(35*time.Minute).Unix(), s.Time[len(s.Time)-1])
			require.Len(t, s.Time, 4+7)
		}},
		{metrics.Range7d, 3600, func(t *testing.T, s metrics.Series) {
			require.Equal(t, h.Unix(), s.Time[0], "nothing of twenty days ago")
			require.InDelta(t, 6.0, *s.ReadRate[0], 1e-9)
			require.InDelta(t, 0.3, *s.LatencyP99[0], 1e-9)
			require.Equal(t, int64(9), *s.Objects[0])
			require.Equal(t, h.Add(time.Hour).Unix(), s.Time[1])
			require.Nil(t, s.ReadRate[1])
			i := index(s, w)
			require.Equal(t, 2, i)
			// (0+1+2+3+4+50)/6 over the hour's successful scrapes.
			require.InDelta(t, 10.0, *s.ReadRate[i], 1e-9)
			require.InDelta(t, 1.0, *s.LatencyP99[i], 1e-9)
			require.Equal(t, int64(50), *s.Objects[i])
			require.Equal(t, now.Add(-time.Hour).Unix(), s.Time[len(s.Time)-1])
			require.Len(t, s.Time, 4)
		}},
		{metrics.Range30d, 3600, func(t *testing.T, s metrics.Series) {
			require.Equal(t, d.Unix(), s.Time[0])
			require.InDelta(t, 12.0, *s.ReadRate[0], 1e-9)
			require.InDelta(t, 2.0, *s.LatencyP99[0], 1e-9)
			require.Nil(t, s.ReadRate[1])
			require.Equal(t, h.Unix(), s.Time[2])
			require.Len(t, s.Time, 2+4)
		}},
	} {
		t.Run(string(tc.r), func(t *testing.T) {
			t.Parallel()
			s, err := b.prom.Read(ctx, cluster, tc.r, now, time.Minute)
			require.NoError(t, err)
			require.Equal(t, tc.r, s.Range)
			require.Equal(t, tc.step, s.Step)
			for _, col := range [][]*float64{s.ReadRate, s.WriteRate, s.WatchRate, s.ErrorRate, s.LatencyP50, s.LatencyP99, s.Inflight} {
				require.Len(t, col, len(s.Time))
				for _, v := range col {
					require.True(t, v == nil || *v < 1000, "the other cluster's figures mixed in")
				}
			}
			for _, col := range [][]*int64{s.Objects, s.Watches} {
				require.Len(t, col, len(s.Time))
				for _, v := range col {
					require.True(t, v == nil || *v < 1000, "the other cluster's figures mixed in")
				}
			}
			for _, col := range [][]*int32{s.NodesReady, s.NodesTotal, s.PodsRunning, s.PodsTotal} {
				require.Len(t, col, len(s.Time))
			}
			tc.check(t, s)
		})
	}

	t.Run("objects by resource", func(t *testing.T) {
		t.Parallel()
		resp, err := http.Get(b.vm + "/api/v1/query?" + url.Values{
			"query": {`kubebyon_controlplane_objects_by_resource{cluster_id="7",resource="configmaps"}`},
			"time":  {strconv.FormatInt(hourStart.Add(39*time.Minute).Unix(), 10)},
		}.Encode())
		require.NoError(t, err)
		defer resp.Body.Close()
		var answer struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
		require.Len(t, answer.Data.Result, 1)
		require.Equal(t, "139", answer.Data.Result[0].Value[1])
	})

	t.Run("no samples", func(t *testing.T) {
		t.Parallel()
		s, err := b.prom.Read(ctx, 9, metrics.Range24h, now, time.Minute)
		require.NoError(t, err)
		require.Empty(t, s.Time)
		require.Equal(t, int64(300), s.Step)
	})
}

// TestPromWindow reads the successful scrapes alerts look at: in order,
// the bounds included, failed scrapes and other clusters left out.
func TestPromWindow(t *testing.T) {
	t.Parallel()
	b := promSetup(t)
	now := b.now.Add(-7 * time.Minute)
	var samples []metrics.Sample
	for i := range 13 {
		at := now.Add(time.Duration(i-12) * time.Minute)
		if i == 6 {
			samples = append(samples, metrics.Sample{At: at})
			continue
		}
		smp := promUp(at, 1, float64(i)/10, float64(i), 0)
		switch i {
		case 8:
			smp.LatencyP99 = nil // no request finished
		case 9:
			smp.ErrorRate = pv(math.NaN()) // not written
		}
		samples = append(samples, smp)
	}
	b.write(t, 1, samples...)
	b.write(t, 2, promUp(now.Add(-time.Minute), 1, 9, 9, 0))
	// Written after now: not in the window.
	b.write(t, 1, promUp(now.Add(time.Second), 1, 9, 9, 0))

	w, err := b.prom.Window(context.Background(), 1, now.Add(-10*time.Minute), now)
	require.NoError(t, err)
	var at []time.Time
	for _, p := range w {
		at = append(at, p.At)
	}
	want := []time.Time{}
	for i := 2; i <= 12; i++ {
		if i != 6 {
			want = append(want, now.Add(time.Duration(i-12)*time.Minute))
		}
	}
	require.Equal(t, want, at)
	require.InDelta(t, 2.0, *w[0].ErrorRate, 1e-9)
	require.InDelta(t, 0.2, *w[0].LatencyP99, 1e-9)
	require.Nil(t, w[5].LatencyP99, "minute 8: no request finished")
	require.InDelta(t, 8.0, *w[5].ErrorRate, 1e-9)
	require.Nil(t, w[6].ErrorRate, "minute 9: NaN")
	require.InDelta(t, 0.9, *w[6].LatencyP99, 1e-9)
	require.InDelta(t, 1.2, *w[len(w)-1].LatencyP99, 1e-9)

	w, err = b.prom.Window(context.Background(), 3, now.Add(-10*time.Minute), now)
	require.NoError(t, err)
	require.Empty(t, w)
}

// TestPromTop ranks control planes by requests and by 5xx over the last
// hour: ties by cluster ID, n the most, clusters without a successful
// scrape in the span or without 5xx (for TopErrors) left out.
func TestPromTop(t *testing.T) {
	t.Parallel()
	b := promSetup(t)
	now := b.now.Add(-20 * time.Minute)
	since := now.Add(-time.Hour)
	req := func(at time.Time, read, watch, errors, p99 float64) metrics.Sample {
		smp := promUp(at, read, p99, errors, 1)
		smp.WatchRate = pv(watch)
		return smp
	}
	// 1: 10+5+1 requests, no 5xx; 2: as many, with 5xx; 3: the most.
	b.write(t, 1, req(now.Add(-50*time.Minute), 10, 1, 0, 0.1), req(now.Add(-10*time.Minute), 10, 1, 0, 0.2),
		metrics.Sample{At: now.Add(-5 * time.Minute)})
	b.write(t, 2, req(now.Add(-30*time.Minute), 10, 1, 0.5, 0.3))
	b.write(t, 3, req(now.Add(-40*time.Minute), 20, 0, 0, 0.1), req(now, 40, 0, 0.2, 0.4))
	// 4: only failed scrapes in the span, busy before it and after now.
	b.write(t, 4, metrics.Sample{At: now.Add(-30 * time.Minute)}, req(since.Add(-time.Second), 1e6, 0, 1, 1),
		req(now.Add(time.Second), 1e6, 0, 1, 1))
	// 5: one quiet scrape, on since itself.
	b.write(t, 5, req(since, 0.5, 0.25, 0, 0))

	ctx := context.Background()
	for _, tc := range []struct {
		name string
		by   metrics.TopOrder
		n    int
		want []metrics.TopCluster
	}{
		{"requests", metrics.TopRequests, 10, []metrics.TopCluster{
			{ClusterID: 3, Requests: 45, Errors: 0.1, P99: 0.4},
			{ClusterID: 1, Requests: 16, Errors: 0, P99: 0.2},
			{ClusterID: 2, Requests: 16, Errors: 0.5, P99: 0.3},
			{ClusterID: 5, Requests: 1, Errors: 0, P99: 0},
		}},
		{"requests, two", metrics.TopRequests, 2, []metrics.TopCluster{
			{ClusterID: 3, Requests: 45, Errors: 0.1, P99: 0.4},
			{ClusterID: 1, Requests: 16, Errors: 0, P99: 0.2},
		}},
		{"errors", metrics.TopErrors, 10, []metrics.TopCluster{
			{ClusterID: 2, Requests: 16, Errors: 0.5, P99: 0.3},
			{ClusterID: 3, Requests: 45, Errors: 0.1, P99: 0.4},
		}},
		{"errors, one", metrics.TopErrors, 1, []metrics.TopCluster{
			{ClusterID: 2, Requests: 16, Errors: 0.5, P99: 0.3},
		}},
		{"none asked", metrics.TopRequests, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			top, err := b.prom.Top(ctx, tc.by, since, now, tc.n)
			require.NoError(t, err)
			require.Len(t, top, len(tc.want))
			for i, want := range tc.want {
				got := top[i]
				require.Equal(t, want.ClusterID, got.ClusterID, "rank %d", i)
				require.InDelta(t, want.Requests, got.Requests, 1e-9, "cluster %d", got.ClusterID)
				require.InDelta(t, want.Errors, got.Errors, 1e-9, "cluster %d", got.ClusterID)
				require.InDelta(t, want.P99, got.P99, 1e-9, "cluster %d", got.ClusterID)
			}
		})
	}
}

// TestPromErrors: a write or a query the server refuses, or no server at
// all, is an error that says what happened.
func TestPromErrors(t *testing.T) {
	t.Parallel()
	b := promSetup(t)
	smp := promUp(b.now, 1, 1, 0, 1)
	ctx := context.Background()
	// A query VictoriaMetrics cannot parse, whose error repeats it at length.
	long := b.vm + "/api/v1/query?query=" + url.QueryEscape(strings.Repeat("sum(", 200))

	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"unknown path", b.vm + "/api/v1/nowhere", []string{"400 Bad Request", "unsupported path"}},
		{"long answer", long, []string{"400 Bad Request", "sum(sum("}},
		{"nobody listening", "http://127.0.0.1:1/api/v1/write", []string{"connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := metrics.Prom{WriteURL: tc.url}.Write(ctx, 1, smp)
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			require.Less(t, len(err.Error()), 400, "the answer is quoted up to 200 bytes")
		})
	}

	t.Run("query", func(t *testing.T) {
		t.Parallel()
		_, err := metrics.Prom{QueryURL: b.vm + "/nowhere"}.Read(ctx, 1, metrics.Range1h, b.now, time.Minute)
		require.ErrorContains(t, err, "read metrics of cluster 1")
		_, err = metrics.Prom{QueryURL: "http://127.0.0.1:1"}.Window(ctx, 1, b.now.Add(-time.Minute), b.now)
		require.ErrorContains(t, err, "connection refused")
		_, err = metrics.Prom{QueryURL: "http://127.0.0.1:1"}.Top(ctx, metrics.TopErrors, b.now.Add(-time.Minute), b.now, 3)
		require.ErrorContains(t, err, "rank control planes")
	})
}
