package edge

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/queries"
)

// WatchArgs is the periodic edge watch (jobs.EdgeWatchWorker): it tells
// admins about an edge that stays out of step, and when it is back.
type WatchArgs struct{}

// Kind implements river.JobArgs.
func (WatchArgs) Kind() string { return "edge_watch" }

// OutOfStepAfter is how long an edge may stay out of step before admins
// are told: behind the desired routes without applying anything new, or
// silent (no report).
const OutOfStepAfter = 5 * time.Minute

// Alert is an edge's change of step that admins are told of.
type Alert struct {
	Edge string
	// Back: the edge is in step again; otherwise it has been out of step
	// since Since.
	Back  bool
	Since time.Time
	// Silent: the edge has not reported since Since (else it reports,
	// but serves Applied, not Desired).
	Silent           bool
	Applied, Desired string
	LastError        string
	LastSeen         time.Time
	OutOfStepFor     time.Duration
	OutOfStepMinutes int
}

// Watch looks at every edge (in q, a transaction) against the desired
// version at now, records what it saw, and returns the alerts to send. An
// edge is out of step while it serves another version than the desired
// one, or has not reported for after; it counts as out of step from the
// first time it is seen so, and again from each version it applies that
// is still not the desired one, so that an edge that keeps up with fast
// changes, a little behind each time, is never reported. Admins are told
// once it has been out of step for after, and once more when it is back.
func Watch(ctx context.Context, q *queries.Queries, desired string, now time.Time, after time.Duration) ([]Alert, error) {
	rows, err := q.EdgeWatchList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list edges to watch: %w", err)
	}
	var alerts []Alert
	for _, r := range rows {
		silent := now.Sub(r.LastSeenAt.Time) > after
		behind := r.AppliedVersion != desired
		since, alerted := r.OutOfStepSince, r.AlertedAt
		switch {
		case !behind && !silent:
			since = pgtype.Timestamptz{}
		case silent && !since.Valid:
			since = pgtype.Timestamptz{Time: r.LastSeenAt.Time, Valid: true}
		case !silent && (!since.Valid || r.AppliedVersion != r.ObservedApplied):
			since = pgtype.Timestamptz{Time: now, Valid: true}
		}
		a := Alert{
			Edge: r.Name, Since: since.Time, Silent: silent, Applied: r.AppliedVersion, Desired: desired,
			LastError: r.LastError, LastSeen: r.LastSeenAt.Time,
		}
		switch {
		case since.Valid && now.Sub(since.Time) >= after && !alerted.Valid:
			a.OutOfStepFor = now.Sub(since.Time)
			a.OutOfStepMinutes = int(a.OutOfStepFor.Minutes())
			alerts = append(alerts, a)
			alerted = pgtype.Timestamptz{Time: now, Valid: true}
		case !since.Valid && alerted.Valid:
			a.Back = true
			alerts = append(alerts, a)
			alerted = pgtype.Timestamptz{}
		}
		if err := q.EdgeWatchSave(ctx, queries.EdgeWatchSaveParams{
			ID: r.ID, OutOfStepSince: since, ObservedApplied: r.AppliedVersion, AlertedAt: alerted,
		}); err != nil {
			return nil, fmt.Errorf("record edge %s's step: %w", r.Name, err)
		}
	}
	return alerts, nil
}
