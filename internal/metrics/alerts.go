package metrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/queries"
)

// AlertKind is a figure of a control plane that can stay too high.
type AlertKind string

// The alerts.
const (
	AlertErrors  AlertKind = "errors"
	AlertLatency AlertKind = "latency"
)

// AlertFor is how long a figure stays above its threshold before its
// owner is told.
const AlertFor = 10 * time.Minute

// Alert is an alert raised or cleared by Evaluate. NotificationID is the
// in-app notification that told of a cleared alert (0: none), which the
// caller marks read.
type Alert struct {
	Kind           AlertKind
	NotificationID int64
}

// Evaluate raises the alerts of a cluster whose every successful scrape
// of the last AlertFor was above its threshold (the scrapes must cover
// the whole span: the first no later than an interval and a half after
// its start), and clears the open ones whose last scrape is back under
// it, in the caller's transaction. A gap (an unreachable control plane)
// neither raises nor clears. Each alert is raised once: the caller tells
// the owner of raised and cleared ones and records the notification with
// SetAlertNotification.
//
// latest is the scrape just recorded, at now: a time-series database may
// not show it yet, and the alerts must not wait a scrape for it.
func (s *Service) Evaluate(ctx context.Context, q *queries.Queries, clusterID int64, st Settings, latest Sample) (raised, cleared []Alert, err error) {
	now := latest.At
	since := now.Add(-AlertFor)
	points, err := s.backend().Window(ctx, clusterID, since, now)
	if err != nil {
		return nil, nil, err
	}
	// (Stored times may be cut to the millisecond.)
	if latest.Up && (len(points) == 0 || points[len(points)-1].At.Before(now.Add(-time.Millisecond))) {
		points = append(points, WindowPoint{At: now, ErrorRate: latest.ErrorRate, LatencyP99: latest.LatencyP99})
	}
	if len(points) == 0 {
		return nil, nil, nil
	}
	w := window(points, st.AlertErrorRate, float64(st.AlertLatencyP99Ms)/1000)
	covered := len(points) >= 2 && !points[0].At.After(since.Add(st.Interval()*3/2))
	for _, a := range []struct {
		kind      AlertKind
		on        bool
		high      bool
		last, thr float64
	}{
		{AlertErrors, st.AlertErrorRate > 0, w.errorsHigh, w.lastErrorRate, st.AlertErrorRate},
		{AlertLatency, st.AlertLatencyP99Ms > 0, w.latencyHigh, w.lastLatencyP99, float64(st.AlertLatencyP99Ms) / 1000},
	} {
		switch {
		case a.on && covered && a.high:
			n, err := q.ClusterMetricAlertOpen(ctx, queries.ClusterMetricAlertOpenParams{ClusterID: clusterID, Kind: string(a.kind)})
			if err != nil {
				return nil, nil, fmt.Errorf("open %s alert of cluster %d: %w", a.kind, clusterID, err)
			}
			if n == 1 {
				raised = append(raised, Alert{Kind: a.kind})
			}
		case !a.on || a.last <= a.thr:
			id, err := q.ClusterMetricAlertClose(ctx, queries.ClusterMetricAlertCloseParams{ClusterID: clusterID, Kind: string(a.kind)})
			if errors.Is(err, pgx.ErrNoRows) {
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("close %s alert of cluster %d: %w", a.kind, clusterID, err)
			}
			cleared = append(cleared, Alert{Kind: a.kind, NotificationID: id.Int64})
		}
	}
	return raised, cleared, nil
}

// windowFigures is what Evaluate needs of a window's scrapes.
type windowFigures struct {
	// errorsHigh: every scrape's 5xx rate was above its threshold;
	// latencyHigh: every scrape with a p99 had it above its threshold
	// (false when none had one).
	errorsHigh, latencyHigh bool
	// The last scrape's figures; 0 when unknown (no request finished,
	// none was slow).
	lastErrorRate, lastLatencyP99 float64
}

// window sums up points (oldest first, at least one).
func window(points []WindowPoint, errorRate, latencyP99 float64) windowFigures {
	var w windowFigures
	var errorsSeen, latencySeen bool
	w.errorsHigh, w.latencyHigh = true, true
	for _, p := range points {
		if p.ErrorRate != nil {
			errorsSeen = true
			w.errorsHigh = w.errorsHigh && *p.ErrorRate > errorRate
		}
		if p.LatencyP99 != nil {
			latencySeen = true
			w.latencyHigh = w.latencyHigh && *p.LatencyP99 > latencyP99
		}
	}
	w.errorsHigh = w.errorsHigh && errorsSeen
	w.latencyHigh = w.latencyHigh && latencySeen
	last := points[len(points)-1]
	if last.ErrorRate != nil {
		w.lastErrorRate = *last.ErrorRate
	}
	if last.LatencyP99 != nil {
		w.lastLatencyP99 = *last.LatencyP99
	}
	return w
}

// SetAlertNotification records the in-app notification that told of a
// raised alert, for its clearing to mark read.
func SetAlertNotification(ctx context.Context, q *queries.Queries, clusterID int64, kind AlertKind, notificationID int64) error {
	if err := q.ClusterMetricAlertSetNotification(ctx, queries.ClusterMetricAlertSetNotificationParams{
		ClusterID: clusterID, Kind: string(kind), NotificationID: pgtype.Int8{Int64: notificationID, Valid: notificationID != 0},
	}); err != nil {
		return fmt.Errorf("record %s alert notification of cluster %d: %w", kind, clusterID, err)
	}
	return nil
}
