package opswatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/opswatch"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type testBundle struct {
	pool *pgxpool.Pool
	// t0 is when the watch first runs; the tests' times are after it.
	t0 time.Time
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{pool: testenv.DB(t), t0: time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)}
}

// at is d after t0.
func (b *testBundle) at(d time.Duration) time.Time { return b.t0.Add(d) }

// watch runs one watch at now with the host check's answer host, and
// commits it.
func (b *testBundle) watch(t *testing.T, now time.Time, host error) ([]opswatch.Alert, opswatch.State) {
	t.Helper()
	var alerts []opswatch.Alert
	var st opswatch.State
	require.NoError(t, pgx.BeginFunc(context.Background(), b.pool, func(tx pgx.Tx) error {
		var err error
		alerts, st, err = opswatch.Watch(context.Background(), tx, now, host)
		return err
	}))
	return alerts, st
}

// saved is the state the watch keeps in the settings table.
func (b *testBundle) saved(t *testing.T) opswatch.State {
	t.Helper()
	row, err := queries.New(b.pool).SettingGet(context.Background(), "ops_watch")
	require.NoError(t, err)
	var st opswatch.State
	require.NoError(t, json.Unmarshal(row.Value, &st))
	return st
}

// discard adds a job of kind that failed for good at at; its errors are
// one per attempt, the last one's the job's error.
func (b *testBundle) discard(t *testing.T, kind string, at time.Time, errs ...string) {
	t.Helper()
	attempts := make([]string, len(errs))
	for i, e := range errs {
		raw, err := json.Marshal(map[string]any{"error": e, "attempt": i + 1, "at": at})
		require.NoError(t, err)
		attempts[i] = string(raw)
	}
	_, err := b.pool.Exec(context.Background(), `INSERT INTO river_job (kind, args, max_attempts, attempt, state, finalized_at, attempted_at, errors)
		VALUES ($1, '{}', $2, $2, 'discarded', $3, $3, $4::jsonb[])`, kind, len(errs), at, attempts)
	require.NoError(t, err)
}

// addJob adds a job of kind in state (not failed for good) finalized,
// if it is final, at at.
func (b *testBundle) addJob(t *testing.T, kind, state string, at time.Time) {
	t.Helper()
	var finalized *time.Time
	if state == "completed" || state == "cancelled" {
		finalized = &at
	}
	_, err := b.pool.Exec(context.Background(), `INSERT INTO river_job (kind, args, max_attempts, attempt, state, finalized_at, attempted_at, errors)
		VALUES ($1, '{}', 3, 1, $2, $3, $4, ARRAY['{"error": "not final", "attempt": 1}'::jsonb])`, kind, state, finalized, at)
	require.NoError(t, err)
}

// templates are the alerts' templates.
func templates(alerts []opswatch.Alert) []string {
	out := []string{}
	for _, a := range alerts {
		out = append(out, a.Template)
	}
	return out
}

// TestFailedSince: the jobs discarded after from and up to to, grouped by
// kind (most first, then by name), each with the last attempt's error of
// its latest job; jobs in other states, and users' webhook deliveries,
// are not counted.
func TestFailedSince(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	from, to := b.at(0), b.at(10*time.Minute)

	b.discard(t, "cluster_reconcile", from, "at the start: told of before")
	b.discard(t, "cluster_reconcile", b.at(time.Minute), "attempt 1", "helm install: timed out")
	b.discard(t, "cluster_reconcile", b.at(3*time.Minute), "attempt 1", "attempt 2", "helm install: no space left")
	b.discard(t, "cluster_reconcile", b.at(2*time.Minute), "older")
	b.discard(t, "email", to, "dial tcp: connection refused")
	b.discard(t, "dns_sync", b.at(5*time.Minute), "SERVFAIL")
	b.discard(t, "email", to.Add(time.Second), "after to")
	b.discard(t, "webhook", b.at(4*time.Minute), "a user's endpoint answered 500")
	b.addJob(t, "node_health", "completed", b.at(4*time.Minute))
	b.addJob(t, "node_health", "cancelled", b.at(4*time.Minute))
	b.addJob(t, "node_health", "retryable", b.at(4*time.Minute))

	var got []opswatch.Failed
	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		got, err = opswatch.FailedSince(ctx, tx, from, to)
		return err
	}))
	require.Equal(t, []opswatch.Failed{
		{Kind: "cluster_reconcile", Jobs: 3, LastError: "helm install: no space left"},
		{Kind: "dns_sync", Jobs: 1, LastError: "SERVFAIL"},
		{Kind: "email", Jobs: 1, LastError: "dial tcp: connection refused"},
	}, got)

	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		got, err = opswatch.FailedSince(ctx, tx, to.Add(time.Second), to.Add(time.Hour))
		return err
	}))
	require.Empty(t, got)
}

// TestWatchFailedJobs: the first watch keeps quiet about what failed
// before it; then jobs failed for good make one alert with their count,
// and those that fail within JobsEvery of an alert wait for the next,
// which counts them all since the last one.
func TestWatchFailedJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	noHost := opswatch.ErrNoHost

	b.discard(t, "cluster_reconcile", b.at(-time.Minute), "before the watch")
	alerts, st := b.watch(t, b.at(0), noHost)
	require.Empty(t, alerts, "failures from before the watch first ran are not news")
	require.True(t, b.at(0).Equal(st.JobsThrough))
	require.True(t, st.JobsToldAt.IsZero())

	alerts, _ = b.watch(t, b.at(time.Minute), noHost)
	require.Empty(t, alerts, "nothing failed since")

	b.discard(t, "cluster_reconcile", b.at(90*time.Second), "helm install: timed out")
	b.discard(t, "email", b.at(100*time.Second), "dial tcp: connection refused")
	b.discard(t, "email", b.at(110*time.Second), "535 authentication failed")
	b.discard(t, "webhook", b.at(115*time.Second), "a user's endpoint answered 500")
	alerts, st = b.watch(t, b.at(2*time.Minute), noHost)
	require.Equal(t, []opswatch.Alert{{Template: opswatch.TemplateJobsFailing, Data: map[string]any{
		"Jobs": int64(3), "Kinds": "email (2), cluster_reconcile (1)", "LastError": "535 authentication failed",
		"Since": b.at(time.Minute).UTC().Format(time.RFC3339),
	}}}, alerts)
	require.True(t, b.at(2*time.Minute).Equal(st.JobsToldAt))
	require.True(t, b.at(2*time.Minute).Equal(st.JobsThrough))
	require.Equal(t, st, b.saved(t))

	// More failures soon after: no alert until JobsEvery has passed.
	b.discard(t, "ingress_reconcile", b.at(3*time.Minute), "x")
	alerts, _ = b.watch(t, b.at(4*time.Minute), noHost)
	require.Empty(t, alerts)
	b.discard(t, "ingress_reconcile", b.at(5*time.Minute), "y")
	alerts, _ = b.watch(t, b.at(2*time.Minute+opswatch.JobsEvery-time.Second), noHost)
	require.Empty(t, alerts)
	alerts, st = b.watch(t, b.at(2*time.Minute+opswatch.JobsEvery), noHost)
	require.Equal(t, []string{opswatch.TemplateJobsFailing}, templates(alerts))
	require.Equal(t, int64(2), alerts[0].Data["Jobs"], "both failures since the last alert")
	require.Equal(t, "ingress_reconcile (2)", alerts[0].Data["Kinds"])
	require.Equal(t, "y", alerts[0].Data["LastError"])
	require.Equal(t, b.at(2*time.Minute).UTC().Format(time.RFC3339), alerts[0].Data["Since"])
	require.True(t, b.at(2*time.Minute+opswatch.JobsEvery).Equal(st.JobsToldAt))

	// Nothing failed: no alert, however long it has been.
	alerts, _ = b.watch(t, b.at(time.Hour), noHost)
	require.Empty(t, alerts)
	// A failure after a quiet spell is told at once.
	b.discard(t, "email", b.at(time.Hour+30*time.Second), strings.Repeat("e", 400))
	alerts, _ = b.watch(t, b.at(time.Hour+time.Minute), noHost)
	require.Equal(t, []string{opswatch.TemplateJobsFailing}, templates(alerts))
	require.Equal(t, strings.Repeat("e", 300), alerts[0].Data["LastError"], "the error is cut to 300 bytes")
	require.Equal(t, b.at(time.Hour).UTC().Format(time.RFC3339), alerts[0].Data["Since"])
}

// TestWatchHost: the host is told unreachable once, when
// HostFailuresBeforeAlert checks in a row failed, with the time of the
// first and the minutes since; and reachable once, when it answers again.
// Fewer failures in a row are no alert; without a host cluster there is
// nothing to watch and nothing is kept.
func TestWatchHost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	down := errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")
	minute := func(n int) time.Time { return b.at(time.Duration(n) * time.Minute) }

	alerts, st := b.watch(t, minute(0), nil)
	require.Empty(t, alerts)
	require.Zero(t, st.HostFailures)

	// A blip: two failures, then an answer.
	for i := 1; i < opswatch.HostFailuresBeforeAlert; i++ {
		alerts, st = b.watch(t, minute(i), down)
		require.Empty(t, alerts, "failure %d", i)
		require.Equal(t, i, st.HostFailures)
		require.True(t, minute(1).Equal(st.HostDownSince))
		require.False(t, st.HostTold)
	}
	alerts, st = b.watch(t, minute(3), nil)
	require.Empty(t, alerts, "a blip that was not told of is not told over")
	require.Equal(t, opswatch.State{JobsThrough: minute(3)}, st)

	// An outage: told on its third failure, once.
	var told []opswatch.Alert
	for i := 10; i < 20; i++ {
		alerts, st = b.watch(t, minute(i), fmt.Errorf("host cluster: %w", down))
		told = append(told, alerts...)
		require.Equal(t, i-9, st.HostFailures)
		require.Equal(t, i >= 9+opswatch.HostFailuresBeforeAlert, st.HostTold, "after failure %d", i-9)
	}
	require.Equal(t, []opswatch.Alert{{Template: opswatch.TemplateHostUnreachable, Data: map[string]any{
		"Since": minute(10).UTC().Format(time.RFC3339), "Minutes": 2, "Error": "host cluster: " + down.Error(),
	}}}, told)
	require.Equal(t, st, b.saved(t), "the state is kept between runs")

	alerts, st = b.watch(t, minute(25), nil)
	require.Equal(t, []opswatch.Alert{{Template: opswatch.TemplateHostReachable, Data: map[string]any{
		"Since": minute(10).UTC().Format(time.RFC3339), "Minutes": 15,
	}}}, alerts)
	require.Zero(t, st.HostFailures)
	require.True(t, st.HostDownSince.IsZero())
	require.False(t, st.HostTold)
	alerts, _ = b.watch(t, minute(26), nil)
	require.Empty(t, alerts, "back is told once")

	// The error told is cut to 300 bytes.
	long := errors.New(strings.Repeat("x", 1000))
	told = nil
	for i := range opswatch.HostFailuresBeforeAlert {
		alerts, _ = b.watch(t, minute(30+i), long)
		told = append(told, alerts...)
	}
	require.Len(t, told, 1)
	require.Equal(t, strings.Repeat("x", 300), told[0].Data["Error"])

	// The host is no longer configured: nothing to watch, nothing kept,
	// and nothing to tell.
	alerts, st = b.watch(t, minute(40), opswatch.ErrNoHost)
	require.Empty(t, alerts)
	require.Equal(t, opswatch.State{JobsThrough: minute(40)}, st)
	alerts, _ = b.watch(t, minute(41), nil)
	require.Empty(t, alerts, "a host configured again is no news")
}

// TestWatchOneAtATime: a watch that starts while another is in progress
// waits for it and goes on from the state it saved, so the two never
// count the same failure twice or lose a host check.
func TestWatchOneAtATime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	down := errors.New("connection refused")
	b.watch(t, b.at(0), nil)

	tx1, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx1.Rollback(ctx) //nolint:errcheck
	_, st, err := opswatch.Watch(ctx, tx1, b.at(time.Minute), down)
	require.NoError(t, err)
	require.Equal(t, 1, st.HostFailures)

	type result struct {
		st  opswatch.State
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			var err error
			_, r.st, err = opswatch.Watch(ctx, tx, b.at(2*time.Minute), down)
			return err
		})
		done <- r
	}()
	// The second watch waits on the lock the first holds.
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = l.database
			WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted)`).Scan(&waiting))
		return waiting
	}, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, tx1.Commit(ctx))

	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, 2, r.st.HostFailures, "the second went on from the first's state")
	require.True(t, b.at(time.Minute).Equal(r.st.HostDownSince))
	require.Equal(t, r.st, b.saved(t))
}

// TestCheckHost: the check runs with a deadline at most HostTimeout away,
// and its answer is CheckHost's.
func TestCheckHost(t *testing.T) {
	t.Parallel()
	refused := errors.New("connection refused")
	for _, want := range []error{nil, refused, opswatch.ErrNoHost} {
		var deadline time.Time
		var ok bool
		start := time.Now()
		err := opswatch.CheckHost(context.Background(), func(ctx context.Context) error {
			deadline, ok = ctx.Deadline()
			return want
		})
		require.Equal(t, want, err)
		require.True(t, ok, "the check has a deadline")
		require.False(t, deadline.After(start.Add(opswatch.HostTimeout).Add(time.Second)), "deadline %v", deadline.Sub(start))
	}

	// A sooner deadline of the caller's is kept.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	callerDeadline, _ := ctx.Deadline()
	err := opswatch.CheckHost(ctx, func(ctx context.Context) error {
		d, _ := ctx.Deadline()
		require.True(t, d.Equal(callerDeadline))
		return nil
	})
	require.NoError(t, err)
}
