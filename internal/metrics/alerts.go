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
func Evaluate(ctx context.Context, q *queries.Queries, clusterID int64, st Settings, now time.Time) (raised, cleared []Alert, err error) {
	since := now.Add(-AlertFor)
	w, err := q.ClusterMetricWindow(ctx, queries.ClusterMetricWindowParams{
		ClusterID: clusterID, Since: ts(since),
		ErrorRate: float32(st.AlertErrorRate), LatencyP99: float32(float64(st.AlertLatencyP99Ms) / 1000),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("metrics of cluster %d for alerts: %w", clusterID, err)
	}
	if w.Samples == 0 {
		return nil, nil, nil
	}
	covered := w.Samples >= 2 && !w.FirstAt.Time.After(since.Add(st.Interval()*3/2))
	for _, a := range []struct {
		kind      AlertKind
		on        bool
		high      bool
		last, thr float64
	}{
		{AlertErrors, st.AlertErrorRate > 0, w.ErrorsHigh, float64(w.LastErrorRate), st.AlertErrorRate},
		{AlertLatency, st.AlertLatencyP99Ms > 0, w.LatencyHigh, float64(w.LastLatencyP99), float64(st.AlertLatencyP99Ms) / 1000},
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
