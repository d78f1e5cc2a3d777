package metrics

import (
	"context"
	"time"
)

// Backend is where the samples are kept and read: PostgreSQL (PG, the
// default) or a Prometheus-compatible time-series database written with
// remote write and read with PromQL (Prom). The pages, the alerts and the
// admin overview read through it, so they work the same on either.
type Backend interface {
	// Write stores one sample of a cluster. A sample with Up false is a
	// gap: no figure is stored for it.
	Write(ctx context.Context, clusterID int64, smp Sample) error
	// Read is a cluster's history over r up to now, at the range's
	// resolution: the raw samples (step interval) for an hour, 5-minute
	// steps for a day, hourly beyond; rates and p50 averaged over a step,
	// p99 and inflight the worst, counts the last. A step without a
	// successful scrape is a null in every figure.
	Read(ctx context.Context, clusterID int64, r Range, now time.Time, interval time.Duration) (Series, error)
	// Window is a cluster's successful scrapes in [since, now], oldest
	// first, with the two figures alerts watch.
	Window(ctx context.Context, clusterID int64, since, now time.Time) ([]WindowPoint, error)
	// Top is at most n control planes with figures in [since, now],
	// ordered by by (highest first, then by cluster ID); for TopErrors
	// only those whose 5xx rate is above zero.
	Top(ctx context.Context, by TopOrder, since, now time.Time, n int) ([]TopCluster, error)
}

// WindowPoint is one successful scrape as alerts see it. A nil figure is
// unknown (for LatencyP99: no request finished).
type WindowPoint struct {
	At         time.Time
	ErrorRate  *float64
	LatencyP99 *float64
}

// TopOrder is what Top ranks by.
type TopOrder int

// The orders of Top.
const (
	// TopRequests ranks by requests a second (reads, writes and watches
	// together), averaged over the span.
	TopRequests TopOrder = iota
	// TopErrors ranks by 5xx a second averaged over the span, leaving out
	// control planes without any.
	TopErrors
)

// TopCluster is a control plane's figures over Top's span: requests and
// 5xx a second averaged, p99 the worst seen (seconds; 0 if none).
type TopCluster struct {
	ClusterID        int64
	Requests, Errors float64
	P99              float64
}
