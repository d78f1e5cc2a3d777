package metrics

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// maxByResource is how many resources a Sample keeps the object count of,
// the largest: enough for every built-in resource that holds objects in a
// typical cluster, and a bound on what a cluster with hundreds of CRDs
// stores per sample. Objects still counts them all.
const maxByResource = 50

// Derive is the Sample of the interval from the scrape prev, read at
// prevAt, to the scrape cur, read at at. Rates are the counters' increase
// over the interval per second, latencies the quantiles of the requests
// answered in it; gauges are cur's. Without a previous scrape (prev nil),
// or with an interval that is not positive, rates and latencies are nil.
//
// A restarted control plane starts its counters from zero again. As
// Prometheus's rate() does, a counter that went down (or every counter,
// when the process start time changed) is taken to have restarted from
// zero during the interval: its increase is its current value, never
// negative. What was counted between prev and the restart is lost, so the
// rate is a lower bound over such an interval.
func Derive(prev *Counters, prevAt time.Time, cur Counters, at time.Time) Sample {
	s := Sample{At: at, Up: true}
	setGauges(&s, cur)
	elapsed := at.Sub(prevAt).Seconds()
	if prev == nil || elapsed <= 0 {
		return s
	}
	restarted := prev.Start != 0 && cur.Start != 0 && prev.Start != cur.Start
	rate := func(p, c float64) *float64 {
		return addr(increase(p, c, restarted) / elapsed)
	}
	s.ReadRate = rate(prev.Reads, cur.Reads)
	s.WriteRate = rate(prev.Writes, cur.Writes)
	s.WatchRate = rate(prev.WatchRequests, cur.WatchRequests)
	s.ErrorRate = rate(prev.Errors, cur.Errors)
	d := histogramIncrease(prev.Latency, cur.Latency, restarted)
	s.LatencyP50 = d.quantile(0.5)
	s.LatencyP99 = d.quantile(0.99)
	return s
}

// increase is a counter's increase from p to c: c itself when it was
// reset in between.
func increase(p, c float64, reset bool) float64 {
	if reset || c < p {
		return c
	}
	return c - p
}

// histogramIncrease is the histogram of the observations from p to c: c
// itself when it was reset in between (restarted, its count or a bucket
// went down, or its buckets changed).
func histogramIncrease(p, c Histogram, restarted bool) Histogram {
	if restarted || c.Count < p.Count || !slices.Equal(p.Bounds, c.Bounds) {
		return c
	}
	d := Histogram{Bounds: c.Bounds, Counts: make([]uint64, len(c.Counts)), Count: c.Count - p.Count}
	for i := range c.Counts {
		if c.Counts[i] < p.Counts[i] {
			return c
		}
		d.Counts[i] = c.Counts[i] - p.Counts[i]
	}
	return d
}

// quantile estimates the q-quantile of the observations as Prometheus's
// histogram_quantile does: it finds the bucket the q-th observation falls
// in and interpolates linearly within it (from 0 for the first bucket).
// In the +Inf bucket, it is the highest finite bound. Nil without
// observations.
func (h Histogram) quantile(q float64) *float64 {
	if h.Count == 0 || len(h.Bounds) == 0 || len(h.Counts) != len(h.Bounds) {
		return nil
	}
	rank := q * float64(h.Count)
	i := slices.IndexFunc(h.Counts, func(n uint64) bool { return float64(n) >= rank })
	if i < 0 {
		return addr(h.Bounds[len(h.Bounds)-1])
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = h.Bounds[i-1], float64(h.Counts[i-1])
	}
	upper := h.Bounds[i]
	if i == 0 && upper <= 0 {
		return addr(upper)
	}
	inBucket := float64(h.Counts[i]) - below
	return addr(lower + (upper-lower)*(rank-below)/inBucket)
}

// setGauges sets the figures of the moment of the scrape. The objects of
// all resources together are unknown when the apiserver failed to count
// those of a resource; the other resources' counts still hold.
func setGauges(s *Sample, c Counters) {
	s.Inflight = addr(c.Inflight)
	s.Watches = addr(c.OpenWatches)
	if c.Objects == nil {
		return
	}
	counted := maps.Clone(c.Objects)
	maps.DeleteFunc(counted, func(_ string, n int64) bool { return n < 0 })
	if len(counted) == len(c.Objects) {
		var total int64
		for _, n := range counted {
			total += n
		}
		s.Objects = addr(total)
	}
	s.ByResource = largest(counted, maxByResource)
}

// largest is the n resources of counts with the most objects (by name
// among equals): counts itself when it has no more.
func largest(counts map[string]int64, n int) map[string]int64 {
	if len(counts) <= n {
		return counts
	}
	names := slices.Collect(maps.Keys(counts))
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	top := make(map[string]int64, n)
	for _, name := range names[:n] {
		top[name] = counts[name]
	}
	return top
}

func addr[T any](v T) *T { return &v }
