// Package opswatch watches the platform itself for what its operators must
// hear of without looking: background jobs that failed for good, and the
// host cluster gone unreachable (and back). The ops_watch periodic job
// runs Watch; the worker tells the admins and the platform's webhook
// channels of each alert it returns.
//
// The database going away cannot be told this way: the alerts are queued
// in it. Its outages show in the log and in /readyz.
package opswatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/queries"
)

// WatchArgs is the periodic ops_watch job.
type WatchArgs struct{}

// Kind implements river.JobArgs.
func (WatchArgs) Kind() string { return "ops_watch" }

const (
	// Interval is how often the watch runs.
	Interval = time.Minute
	// JobsEvery is the least time between two alerts about failed jobs:
	// jobs failing one after another make one alert in that time, with
	// their count.
	JobsEvery = 15 * time.Minute
	// HostFailuresBeforeAlert is how many checks in a row must fail before
	// the host counts as unreachable: a restart of its API server or a
	// moment's network trouble is not an alert.
	HostFailuresBeforeAlert = 3
	// HostTimeout bounds one check of the host.
	HostTimeout = 10 * time.Second
	// settingKey is where the watch keeps its state (settings table).
	settingKey = "ops_watch"
)

// ignoredKinds are the job kinds whose failures are not the operators'
// business: a user's webhook that keeps failing is told in the user's
// own delivery log (and telling the platform's webhooks of their own
// failures would go round in circles).
var ignoredKinds = []string{"webhook"}

// State is what the watch remembers between runs.
type State struct {
	// JobsThrough: failed jobs finalized up to this time were told of
	// (or were there before the watch first ran).
	JobsThrough time.Time `json:"jobs_through"`
	// JobsToldAt is when failed jobs were last told of.
	JobsToldAt time.Time `json:"jobs_told_at,omitzero"`
	// HostFailures counts the failed host checks in a row.
	HostFailures int `json:"host_failures"`
	// HostDownSince is the first failed check of the current run of
	// failures; zero while the host answers.
	HostDownSince time.Time `json:"host_down_since,omitzero"`
	// HostTold: the admins were told the host is unreachable, and will be
	// told when it is back.
	HostTold bool `json:"host_told"`
}

// Failed is a kind of job that failed for good since the last alert.
type Failed struct {
	Kind      string
	Jobs      int64
	LastError string
}

// Alert is something to tell the operators: Template is one of notify's
// templates and Data its values.
type Alert struct {
	Template string
	Data     map[string]any
}

// Templates of the alerts (notify's email templates; the locale has
// Mail<T>Subject, Mail<T>Body and Notify<T>Body for each).
const (
	TemplateJobsFailing     = "JobsFailing"
	TemplateHostUnreachable = "HostUnreachable"
	TemplateHostReachable   = "HostReachable"
)

// HostCheck reports whether the host cluster answers: nil when it does,
// ErrNoHost when none is configured (nothing to watch), another error
// when it does not answer. It is given HostTimeout.
type HostCheck func(ctx context.Context) error

// CheckHost runs check within HostTimeout; its answer goes to Watch. It is
// run before Watch's transaction, which is then not held open while the
// host is slow to answer.
func CheckHost(ctx context.Context, check HostCheck) error {
	ctx, cancel := context.WithTimeout(ctx, HostTimeout)
	defer cancel()
	return check(ctx)
}

// ErrNoHost is HostCheck's answer when no host cluster is configured.
var ErrNoHost = errors.New("no host cluster is configured")

// Watch runs one watch in tx at now: it reads and locks the state, reads
// the failed jobs, takes in host (CheckHost's answer), saves the state and
// returns what to tell.
func Watch(ctx context.Context, tx pgx.Tx, now time.Time, host error) ([]Alert, State, error) {
	q := queries.New(tx)
	// One watch at a time: the state row is taken under an advisory
	// transaction lock (the row may not exist yet).
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('kubebyon.ops_watch'))`); err != nil {
		return nil, State{}, fmt.Errorf("lock ops watch: %w", err)
	}
	st, first, err := load(ctx, q)
	if err != nil {
		return nil, State{}, err
	}
	var alerts []Alert
	if first {
		// Failures from before the watch ran are not news.
		st.JobsThrough = now
	} else if now.Sub(st.JobsToldAt) >= JobsEvery {
		failed, err := FailedSince(ctx, tx, st.JobsThrough, now)
		if err != nil {
			return nil, State{}, err
		}
		if len(failed) > 0 {
			alerts = append(alerts, jobsAlert(failed, st.JobsThrough))
			st.JobsToldAt = now
		}
		st.JobsThrough = now
	}
	if a, ok := hostStep(&st, now, host); ok {
		alerts = append(alerts, a)
	}
	if err := save(ctx, q, st); err != nil {
		return nil, State{}, err
	}
	return alerts, st, nil
}

// hostStep moves st on by the host check's answer err; it returns the
// alert of a change worth telling.
func hostStep(st *State, now time.Time, err error) (Alert, bool) {
	switch {
	case errors.Is(err, ErrNoHost):
		*st = State{JobsThrough: st.JobsThrough, JobsToldAt: st.JobsToldAt}
		return Alert{}, false
	case err == nil:
		back := st.HostTold
		down := st.HostDownSince
		st.HostFailures, st.HostDownSince, st.HostTold = 0, time.Time{}, false
		if back {
			return Alert{Template: TemplateHostReachable, Data: map[string]any{
				"Since": down.UTC().Format(time.RFC3339), "Minutes": minutes(now.Sub(down)),
			}}, true
		}
		return Alert{}, false
	}
	if st.HostFailures == 0 {
		st.HostDownSince = now
	}
	st.HostFailures++
	if st.HostTold || st.HostFailures < HostFailuresBeforeAlert {
		return Alert{}, false
	}
	st.HostTold = true
	return Alert{Template: TemplateHostUnreachable, Data: map[string]any{
		"Since": st.HostDownSince.UTC().Format(time.RFC3339), "Minutes": minutes(now.Sub(st.HostDownSince)),
		"Error": input.Truncate(err.Error(), 300),
	}}, true
}

// jobsAlert sums failed up for the alert.
func jobsAlert(failed []Failed, since time.Time) Alert {
	var total int64
	kinds := ""
	lastError := ""
	for i, f := range failed {
		total += f.Jobs
		if i > 0 {
			kinds += ", "
		}
		kinds += fmt.Sprintf("%s (%d)", f.Kind, f.Jobs)
		if lastError == "" {
			lastError = f.LastError
		}
	}
	return Alert{Template: TemplateJobsFailing, Data: map[string]any{
		"Jobs": total, "Kinds": kinds, "LastError": input.Truncate(lastError, 300), "Since": since.UTC().Format(time.RFC3339),
	}}
}

// FailedSince is the jobs that failed for good (River's discarded state)
// after from and up to to, by kind, each with the error of the latest.
func FailedSince(ctx context.Context, tx pgx.Tx, from, to time.Time) ([]Failed, error) {
	// River's table is not in our migrations, so not in sqlc's schema.
	rows, err := tx.Query(ctx, `
SELECT kind, count(*),
       coalesce((array_agg(errors[array_length(errors, 1)]->>'error' ORDER BY finalized_at DESC))[1], '')
FROM river_job
WHERE state = 'discarded' AND finalized_at > $1 AND finalized_at <= $2 AND kind <> ALL($3::text[])
GROUP BY kind ORDER BY count(*) DESC, kind`, from, to, ignoredKinds)
	if err != nil {
		return nil, fmt.Errorf("failed jobs: %w", err)
	}
	fs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Failed, error) {
		var f Failed
		err := r.Scan(&f.Kind, &f.Jobs, &f.LastError)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("failed jobs: %w", err)
	}
	return fs, nil
}

func load(ctx context.Context, q *queries.Queries) (State, bool, error) {
	raw, err := q.SettingGet(ctx, settingKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return State{}, true, nil
	}
	if err != nil {
		return State{}, false, fmt.Errorf("load ops watch state: %w", err)
	}
	var st State
	if err := json.Unmarshal(raw.Value, &st); err != nil {
		return State{}, false, fmt.Errorf("decode ops watch state: %w", err)
	}
	return st, false, nil
}

func save(ctx context.Context, q *queries.Queries, st State) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode ops watch state: %w", err)
	}
	if err := q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: settingKey, Value: raw}); err != nil {
		return fmt.Errorf("save ops watch state: %w", err)
	}
	return nil
}

func minutes(d time.Duration) int { return int(d.Round(time.Minute) / time.Minute) }

// Current reads what the watch remembers (the zero State before its first
// run): the admin overview tells from it whether the host answers.
func Current(ctx context.Context, q *queries.Queries) (State, error) {
	st, _, err := load(ctx, q)
	return st, err
}
