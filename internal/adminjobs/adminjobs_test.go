package adminjobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/adminjobs"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// alphaArgs and betaArgs are two kinds of job; nothing works them, the
// tests put them in each state themselves.
type alphaArgs struct {
	N int `json:"n"`
}

func (alphaArgs) Kind() string { return "adminjobs_test_alpha" }

type betaArgs struct {
	N int `json:"n"`
}

func (betaArgs) Kind() string { return "adminjobs_test_beta" }

var (
	kindAlpha = alphaArgs{}.Kind()
	kindBeta  = betaArgs{}.Kind()
)

type testBundle struct {
	pool  *pgxpool.Pool
	river *river.Client[pgx.Tx]
	svc   *adminjobs.Service
	admin audit.Actor
}

// setup gives a service on a database of the test's own, with an
// insert-only River client (as the API replicas hold) and an active admin.
func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := testenv.DB(t)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	b := &testBundle{pool: pool, river: client}
	b.svc = &adminjobs.Service{Pool: pool, River: client}
	admin := b.user(t, "admin@example.com", "admin", false)
	b.admin = audit.Actor{UserID: admin.ID, Email: admin.Email, IP: "192.0.2.1"}
	return b
}

// user makes a verified account with the role, disabled when told.
func (b *testBundle) user(t *testing.T, email, role string, disabled bool) queries.User {
	t.Helper()
	ctx := context.Background()
	u, err := queries.New(b.pool).UserCreate(ctx, queries.UserCreateParams{
		Email: email, Name: "Name of " + email, Role: role,
		EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
	})
	require.NoError(t, err)
	if disabled {
		_, err = b.pool.Exec(ctx, "UPDATE users SET disabled_at = now() WHERE id = $1", u.ID)
		require.NoError(t, err)
	}
	return u
}

// job inserts a job of kind and puts it in state; errs are the errors of
// its failed attempts, oldest first.
func (b *testBundle) job(t *testing.T, kind string, state rivertype.JobState, errs ...string) int64 {
	t.Helper()
	ctx := context.Background()
	var args river.JobArgs = alphaArgs{}
	if kind == kindBeta {
		args = betaArgs{}
	}
	opts := &river.InsertOpts{}
	switch state {
	case rivertype.JobStateScheduled:
		opts.ScheduledAt = time.Now().Add(time.Hour)
	case rivertype.JobStatePending:
		opts.Pending = true
	}
	res, err := b.river.Insert(ctx, args, opts)
	require.NoError(t, err)
	require.Equal(t, kind, res.Job.Kind)
	id := res.Job.ID
	attemptErrs := make([]rivertype.AttemptError, len(errs))
	for i, e := range errs {
		attemptErrs[i] = rivertype.AttemptError{At: time.Now().Add(time.Duration(i-len(errs)) * time.Minute), Attempt: i + 1, Error: e}
	}
	encoded := make([][]byte, len(attemptErrs))
	for i, e := range attemptErrs {
		encoded[i], err = json.Marshal(e)
		require.NoError(t, err)
	}
	switch state {
	case rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStatePending:
		require.Equal(t, state, res.Job.State)
	case rivertype.JobStateRunning:
		_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(),
			attempted_by = ARRAY['adminjobs-test'] WHERE id = $1`, id)
	case rivertype.JobStateRetryable:
		_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'retryable', attempt = $2, attempted_at = now(),
			scheduled_at = now() + interval '1 hour', errors = $3::jsonb[] WHERE id = $1`, id, max(len(errs), 1), encoded)
	case rivertype.JobStateCompleted, rivertype.JobStateCancelled:
		_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = $2::river_job_state, attempt = least(max_attempts, $3),
			attempted_at = now(), finalized_at = now(), errors = $4::jsonb[] WHERE id = $1`, id, string(state), max(len(errs), 1), encoded)
	case rivertype.JobStateDiscarded:
		// Discarded: out of attempts.
		_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'discarded', attempt = max_attempts,
			attempted_at = now(), finalized_at = now(), errors = $2::jsonb[] WHERE id = $1`, id, encoded)
	default:
		t.Fatalf("job: state %q", state)
	}
	require.NoError(t, err)
	return id
}

// state reads a job's state as stored.
func (b *testBundle) state(t *testing.T, id int64) rivertype.JobState {
	t.Helper()
	var s rivertype.JobState
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT state::text FROM river_job WHERE id = $1", id).Scan(&s))
	return s
}

// auditEvents are the details of the events of action on job id, oldest
// first, with who acted.
func (b *testBundle) auditEvents(t *testing.T, action string, id int64) []map[string]any {
	t.Helper()
	rows, err := b.pool.Query(context.Background(),
		`SELECT actor_id, actor_email, details FROM audit_events
		WHERE action = $1 AND target_type = 'job' AND target_id = $2 ORDER BY id`, action, fmt.Sprint(id))
	require.NoError(t, err)
	var out []map[string]any
	var actorID pgtype.Int8
	var email string
	var details map[string]any
	_, err = pgx.ForEachRow(rows, []any{&actorID, &email, &details}, func() error {
		d := map[string]any{"actor": email, "actorID": actorID.Int64}
		for k, v := range details {
			d[k] = v
		}
		out = append(out, d)
		return nil
	})
	require.NoError(t, err)
	return out
}

func (b *testBundle) overview(t *testing.T, f adminjobs.Filter) adminjobs.Overview {
	t.Helper()
	o, err := b.svc.Overview(context.Background(), f)
	require.NoError(t, err)
	return o
}

func ids(jobs []*rivertype.JobRow) []int64 {
	var out []int64
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func TestValidState(t *testing.T) {
	t.Parallel()
	for _, s := range rivertype.JobStates() {
		require.True(t, adminjobs.ValidState(string(s)), s)
	}
	for _, s := range []string{"", "Running", "failed", "available "} {
		require.False(t, adminjobs.ValidState(s), s)
	}
}

// TestCanRetryCanCancel: what each state allows, as the page offers it.
func TestCanRetryCanCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		state         rivertype.JobState
		retry, cancel bool
	}{
		{state: rivertype.JobStateAvailable, cancel: true},
		{state: rivertype.JobStateScheduled, cancel: true},
		{state: rivertype.JobStatePending},
		{state: rivertype.JobStateRunning, cancel: true},
		{state: rivertype.JobStateRetryable, retry: true, cancel: true},
		{state: rivertype.JobStateCompleted, retry: true},
		{state: rivertype.JobStateDiscarded, retry: true},
		{state: rivertype.JobStateCancelled, retry: true},
	}
	var covered []rivertype.JobState
	for _, tt := range tests {
		require.Equal(t, tt.retry, adminjobs.CanRetry(tt.state), "retry %s", tt.state)
		require.Equal(t, tt.cancel, adminjobs.CanCancel(tt.state), "cancel %s", tt.state)
		covered = append(covered, tt.state)
	}
	require.ElementsMatch(t, rivertype.JobStates(), covered, "every River state is covered")
}

// TestOverviewCountsAndFilters: the counts by state and kind, and the list
// by state, by kind and by both, newest first.
func TestOverviewCountsAndFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)

	empty := b.overview(t, adminjobs.Filter{})
	require.Empty(t, empty.Counts)
	require.Empty(t, empty.Jobs)
	require.False(t, empty.More)

	type made struct {
		id    int64
		kind  string
		state rivertype.JobState
	}
	var jobs []made
	for _, m := range []struct {
		kind  string
		state rivertype.JobState
		n     int
	}{
		{kindAlpha, rivertype.JobStateAvailable, 3},
		{kindBeta, rivertype.JobStateAvailable, 1},
		{kindAlpha, rivertype.JobStateRunning, 1},
		{kindBeta, rivertype.JobStateCompleted, 2},
		{kindAlpha, rivertype.JobStateRetryable, 1},
		{kindAlpha, rivertype.JobStateDiscarded, 2},
		{kindBeta, rivertype.JobStateScheduled, 1},
		{kindBeta, rivertype.JobStateCancelled, 1},
		{kindAlpha, rivertype.JobStatePending, 1},
	} {
		for range m.n {
			jobs = append(jobs, made{b.job(t, m.kind, m.state), m.kind, m.state})
		}
	}

	o := b.overview(t, adminjobs.Filter{})
	// Ordered by kind, then by River's order of the states.
	require.Equal(t, []adminjobs.Count{
		{State: rivertype.JobStateAvailable, Kind: kindAlpha, Jobs: 3},
		{State: rivertype.JobStateDiscarded, Kind: kindAlpha, Jobs: 2},
		{State: rivertype.JobStatePending, Kind: kindAlpha, Jobs: 1},
		{State: rivertype.JobStateRetryable, Kind: kindAlpha, Jobs: 1},
		{State: rivertype.JobStateRunning, Kind: kindAlpha, Jobs: 1},
		{State: rivertype.JobStateAvailable, Kind: kindBeta, Jobs: 1},
		{State: rivertype.JobStateCancelled, Kind: kindBeta, Jobs: 1},
		{State: rivertype.JobStateCompleted, Kind: kindBeta, Jobs: 2},
		{State: rivertype.JobStateScheduled, Kind: kindBeta, Jobs: 1},
	}, sortedCounts(o.Counts))
	var total int64
	for _, c := range o.Counts {
		total += c.Jobs
	}
	require.EqualValues(t, len(jobs), total)
	for i := 1; i < len(o.Counts); i++ {
		require.LessOrEqual(t, o.Counts[i-1].Kind, o.Counts[i].Kind, "counts come ordered by kind")
	}

	want := func(keep func(made) bool) []int64 {
		var out []int64
		for _, j := range slices.Backward(jobs) {
			if keep(j) {
				out = append(out, j.id)
			}
		}
		return out
	}
	tests := []struct {
		name   string
		filter adminjobs.Filter
		want   []int64
	}{
		{"all", adminjobs.Filter{}, want(func(made) bool { return true })},
		{"available", adminjobs.Filter{State: rivertype.JobStateAvailable}, want(func(j made) bool { return j.state == rivertype.JobStateAvailable })},
		{"discarded", adminjobs.Filter{State: rivertype.JobStateDiscarded}, want(func(j made) bool { return j.state == rivertype.JobStateDiscarded })},
		{"beta", adminjobs.Filter{Kind: kindBeta}, want(func(j made) bool { return j.kind == kindBeta })},
		{"alpha available", adminjobs.Filter{State: rivertype.JobStateAvailable, Kind: kindAlpha}, want(func(j made) bool {
			return j.kind == kindAlpha && j.state == rivertype.JobStateAvailable
		})},
		{"beta running", adminjobs.Filter{State: rivertype.JobStateRunning, Kind: kindBeta}, nil},
		{"unknown kind", adminjobs.Filter{Kind: "no_such_kind"}, nil},
	}
	for _, tt := range tests {
		o := b.overview(t, tt.filter)
		require.Equal(t, tt.want, ids(o.Jobs), tt.name)
		require.False(t, o.More, tt.name)
		for _, j := range o.Jobs {
			if tt.filter.State != "" {
				require.Equal(t, tt.filter.State, j.State, tt.name)
			}
			if tt.filter.Kind != "" {
				require.Equal(t, tt.filter.Kind, j.Kind, tt.name)
			}
		}
	}
}

// sortedCounts orders counts by kind and state name, so that the test
// does not depend on the order of River's state enum.
func sortedCounts(cs []adminjobs.Count) []adminjobs.Count {
	out := slices.Clone(cs)
	slices.SortFunc(out, func(a, b adminjobs.Count) int {
		if a.Kind != b.Kind {
			if a.Kind < b.Kind {
				return -1
			}
			return 1
		}
		if a.State < b.State {
			return -1
		}
		if a.State > b.State {
			return 1
		}
		return 0
	})
	return out
}

// TestOverviewPages: pages of PageSize, newest first, keyset by Before;
// More says whether an older page follows; a filter holds across pages.
func TestOverviewPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var params []river.InsertManyParams
	for i := range 2*adminjobs.PageSize + 3 {
		params = append(params, river.InsertManyParams{Args: alphaArgs{N: i}})
		if i%2 == 0 {
			params = append(params, river.InsertManyParams{Args: betaArgs{N: i}})
		}
	}
	_, err := b.river.InsertMany(ctx, params)
	require.NoError(t, err)

	for _, tt := range []struct {
		kind  string
		sizes []int
		total int
	}{
		{"", []int{50, 50, 50, 5}, len(params)},
		{kindAlpha, []int{50, 50, 3}, 2*adminjobs.PageSize + 3},
		{kindBeta, []int{50, 2}, adminjobs.PageSize + 2},
	} {
		var sizes []int
		var seen []int64
		before := int64(0)
		for {
			o := b.overview(t, adminjobs.Filter{Kind: tt.kind, Before: before})
			sizes = append(sizes, len(o.Jobs))
			for _, j := range o.Jobs {
				if len(seen) > 0 {
					require.Less(t, j.ID, seen[len(seen)-1], "newest first, no repeats")
				}
				if tt.kind != "" {
					require.Equal(t, tt.kind, j.Kind)
				}
				seen = append(seen, j.ID)
			}
			if !o.More {
				break
			}
			require.Len(t, o.Jobs, adminjobs.PageSize)
			before = o.Jobs[len(o.Jobs)-1].ID
		}
		require.Equal(t, tt.sizes, sizes, tt.kind)
		require.Len(t, seen, tt.total, tt.kind)
	}
}

// TestListPagesOfAnySize: List reads the Overview's list a limit at a
// time, under its filter, newest first, saying whether more follow.
func TestListPagesOfAnySize(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.river.InsertMany(ctx, []river.InsertManyParams{
		{Args: alphaArgs{N: 1}}, {Args: betaArgs{N: 2}}, {Args: alphaArgs{N: 3}}, {Args: alphaArgs{N: 4}},
	})
	require.NoError(t, err)
	var seen []int64
	before := int64(0)
	for {
		jobs, more, err := b.svc.List(ctx, adminjobs.Filter{Kind: kindAlpha, Before: before}, 2)
		require.NoError(t, err)
		require.LessOrEqual(t, len(jobs), 2)
		for _, j := range jobs {
			require.Equal(t, kindAlpha, j.Kind)
			seen = append(seen, j.ID)
		}
		if !more {
			break
		}
		before = jobs[len(jobs)-1].ID
	}
	require.Len(t, seen, 3)
	require.IsDecreasing(t, seen, "newest first, no repeats")
	all, more, err := b.svc.List(ctx, adminjobs.Filter{}, 10)
	require.NoError(t, err)
	require.False(t, more)
	require.Len(t, all, 4)
}

// TestOverviewFailingJobs: the failing jobs list with the errors of each
// attempt, in order; a job that never failed has none.
func TestOverviewFailingJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	retrying := b.job(t, kindAlpha, rivertype.JobStateRetryable, "dial tcp: connection refused", "context deadline exceeded")
	discarded := b.job(t, kindBeta, rivertype.JobStateDiscarded, "boom 1", "boom 2", "boom 3")
	b.job(t, kindAlpha, rivertype.JobStateCompleted)
	b.job(t, kindAlpha, rivertype.JobStateAvailable)

	errorsOf := func(j *rivertype.JobRow) []string {
		var out []string
		for i, e := range j.Errors {
			require.Equal(t, i+1, e.Attempt)
			require.False(t, e.At.IsZero())
			out = append(out, e.Error)
		}
		return out
	}
	o := b.overview(t, adminjobs.Filter{State: rivertype.JobStateRetryable})
	require.Equal(t, []int64{retrying}, ids(o.Jobs))
	require.Equal(t, []string{"dial tcp: connection refused", "context deadline exceeded"}, errorsOf(o.Jobs[0]))
	require.Equal(t, 2, o.Jobs[0].Attempt)

	o = b.overview(t, adminjobs.Filter{State: rivertype.JobStateDiscarded})
	require.Equal(t, []int64{discarded}, ids(o.Jobs))
	require.Equal(t, []string{"boom 1", "boom 2", "boom 3"}, errorsOf(o.Jobs[0]))
	require.NotNil(t, o.Jobs[0].FinalizedAt)

	o = b.overview(t, adminjobs.Filter{State: rivertype.JobStateAvailable})
	require.Len(t, o.Jobs, 1)
	require.Empty(t, o.Jobs[0].Errors)
}

// TestOverviewPeriodic: each periodic job with the latest job of its kind
// (finished or not) and the next run one interval after it; a kind never
// run has neither.
func TestOverviewPeriodic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.svc.Periodic = []adminjobs.Schedule{
		{Kind: kindBeta, Interval: 5 * time.Minute},
		{Kind: kindAlpha, Interval: time.Hour},
		{Kind: "adminjobs_test_never", Interval: time.Minute},
	}
	o := b.overview(t, adminjobs.Filter{})
	require.Len(t, o.Periodic, 3)
	for i, p := range o.Periodic {
		require.Equal(t, b.svc.Periodic[i], p.Schedule)
		require.Nil(t, p.Last)
		require.True(t, p.Next.IsZero())
	}

	b.job(t, kindAlpha, rivertype.JobStateCompleted)
	b.job(t, kindBeta, rivertype.JobStateDiscarded, "old")
	betaLast := b.job(t, kindBeta, rivertype.JobStateCompleted)
	alphaLast := b.job(t, kindAlpha, rivertype.JobStateRunning)

	o = b.overview(t, adminjobs.Filter{})
	require.Len(t, o.Periodic, 3)
	beta, alpha, never := o.Periodic[0], o.Periodic[1], o.Periodic[2]

	require.Equal(t, kindBeta, beta.Kind)
	require.NotNil(t, beta.Last)
	require.Equal(t, betaLast, beta.Last.ID)
	require.Equal(t, rivertype.JobStateCompleted, beta.Last.State)
	require.False(t, beta.Last.FinalizedAt.IsZero(), "a completed job says when it ended")
	require.WithinDuration(t, o.Now, beta.Last.FinalizedAt, time.Minute)
	require.Equal(t, beta.Last.CreatedAt.Add(5*time.Minute), beta.Next)
	require.WithinDuration(t, o.Now, beta.Last.CreatedAt, time.Minute)

	require.Equal(t, kindAlpha, alpha.Kind)
	require.NotNil(t, alpha.Last)
	require.Equal(t, alphaLast, alpha.Last.ID)
	require.Equal(t, rivertype.JobStateRunning, alpha.Last.State)
	require.True(t, alpha.Last.FinalizedAt.IsZero(), "a running job has not ended, whatever the kind listed before it")
	require.Equal(t, alpha.Last.CreatedAt.Add(time.Hour), alpha.Next)

	require.Equal(t, "adminjobs_test_never", never.Kind)
	require.Nil(t, never.Last)
	require.True(t, never.Next.IsZero())
}

// TestOverviewLeaderProcessesQueues: the leader (none before one is
// elected), the worker processes' rows and River's queues.
func TestOverviewLeaderProcessesQueues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	o := b.overview(t, adminjobs.Filter{})
	require.Nil(t, o.Leader)
	require.Empty(t, o.Processes)
	require.Empty(t, o.Queues)
	require.WithinDuration(t, time.Now(), o.Now, time.Minute, "the database's time")

	_, err := b.pool.Exec(ctx, `INSERT INTO river_leader (leader_id, elected_at, expires_at)
		VALUES ('worker-a', now() - interval '3 minutes', now() + interval '10 seconds')`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO river_queue (name, created_at, updated_at, paused_at) VALUES
		('default', now() - interval '1 hour', now() - interval '1 minute', NULL),
		('slow', now() - interval '2 hours', now() - interval '20 minutes', now() - interval '30 minutes')`)
	require.NoError(t, err)
	q := queries.New(b.pool)
	started := pgtype.Timestamptz{Time: time.Now().Add(-time.Hour), Valid: true}
	require.NoError(t, q.WorkerProcessBeat(ctx, queries.WorkerProcessBeatParams{
		ID: "worker-a", Hostname: "host-a", Pid: 41, Version: "v1", Queues: []string{"default"}, StartedAt: started,
	}))
	require.NoError(t, q.WorkerProcessBeat(ctx, queries.WorkerProcessBeatParams{
		ID: "worker-b", Hostname: "host-b", Pid: 42, Version: "v1", Queues: []string{"default", "slow"}, StartedAt: started,
	}))
	_, err = q.WorkerProcessMarkStopped(ctx, "worker-b")
	require.NoError(t, err)

	o = b.overview(t, adminjobs.Filter{})
	require.NotNil(t, o.Leader)
	require.Equal(t, "worker-a", o.Leader.ID)
	require.WithinDuration(t, o.Now.Add(-3*time.Minute), o.Leader.ElectedAt, 5*time.Second)
	require.True(t, o.Leader.ExpiresAt.After(o.Now), "an unexpired term")

	require.Len(t, o.Processes, 2)
	require.Equal(t, "worker-a", o.Processes[0].ID, "running first")
	require.False(t, o.Processes[0].StoppedAt.Valid)
	require.Equal(t, "worker-b", o.Processes[1].ID)
	require.True(t, o.Processes[1].StoppedAt.Valid)

	var names []string
	for _, qu := range o.Queues {
		names = append(names, qu.Name)
		switch qu.Name {
		case "default":
			require.Nil(t, qu.PausedAt)
			require.Less(t, o.Now.Sub(qu.UpdatedAt), adminjobs.QueueSilentAfter)
		case "slow":
			require.NotNil(t, qu.PausedAt)
			require.Greater(t, o.Now.Sub(qu.UpdatedAt), adminjobs.QueueSilentAfter)
		}
	}
	require.ElementsMatch(t, []string{"default", "slow"}, names)
}

// TestRetry: a job that failed or finished is made available now, with an
// audit event saying from and to what; any other state is refused and
// left alone, with no event.
func TestRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, state := range rivertype.JobStates() {
		id := b.job(t, kindAlpha, state, "failed once")
		job, err := b.svc.Retry(ctx, id, b.admin)
		events := b.auditEvents(t, "admin.job_retry", id)
		if !adminjobs.CanRetry(state) {
			require.ErrorIs(t, err, adminjobs.ErrNotAllowed, state)
			require.Nil(t, job, state)
			require.Equal(t, state, b.state(t, id), "refused: %s left alone", state)
			require.Empty(t, events, state)
			continue
		}
		require.NoError(t, err, state)
		require.Equal(t, id, job.ID)
		require.Equal(t, rivertype.JobStateAvailable, job.State, state)
		require.Nil(t, job.FinalizedAt, state)
		require.WithinDuration(t, time.Now(), job.ScheduledAt, time.Minute, state)
		require.Greater(t, job.MaxAttempts, job.Attempt, "%s: room for another attempt (a discarded job had none)", state)
		require.Equal(t, rivertype.JobStateAvailable, b.state(t, id), state)
		require.Equal(t, []map[string]any{{
			"actor": b.admin.Email, "actorID": b.admin.UserID,
			"kind": kindAlpha, "queue": river.QueueDefault, "from": string(state), "to": "available",
		}}, events, state)
	}
}

// TestCancel: a job still to run is cancelled, a running one is asked to
// stop (it stays running until its worker hears of it), each with an audit
// event; a finished or pending job is refused and left alone.
func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, state := range rivertype.JobStates() {
		id := b.job(t, kindBeta, state)
		job, err := b.svc.Cancel(ctx, id, b.admin)
		events := b.auditEvents(t, "admin.job_cancel", id)
		if !adminjobs.CanCancel(state) {
			require.ErrorIs(t, err, adminjobs.ErrNotAllowed, state)
			require.Nil(t, job, state)
			require.Equal(t, state, b.state(t, id), "refused: %s left alone", state)
			require.Empty(t, events, state)
			continue
		}
		require.NoError(t, err, state)
		want := rivertype.JobStateCancelled
		if state == rivertype.JobStateRunning {
			want = rivertype.JobStateRunning
			var asked bool
			require.NoError(t, b.pool.QueryRow(ctx, "SELECT metadata ? 'cancel_attempted_at' FROM river_job WHERE id = $1", id).Scan(&asked))
			require.True(t, asked, "the running job is asked to stop")
		} else {
			require.NotNil(t, job.FinalizedAt, state)
		}
		require.Equal(t, want, job.State, state)
		require.Equal(t, want, b.state(t, id), state)
		require.Equal(t, []map[string]any{{
			"actor": b.admin.Email, "actorID": b.admin.UserID,
			"kind": kindBeta, "queue": river.QueueDefault, "from": string(state), "to": string(want),
		}}, events, state)
	}
}

// TestChangeRefused: only an active admin may retry or cancel; a job that
// does not exist is ErrNotFound. A refused change leaves the job and the
// audit log as they were.
func TestChangeRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	user := b.user(t, "user@example.com", "user", false)
	disabled := b.user(t, "disabled-admin@example.com", "admin", true)

	type change func(*adminjobs.Service, context.Context, int64, audit.Actor) (*rivertype.JobRow, error)
	changes := []struct {
		action string
		do     change
		state  rivertype.JobState // one the change applies to
	}{
		{"admin.job_retry", (*adminjobs.Service).Retry, rivertype.JobStateDiscarded},
		{"admin.job_cancel", (*adminjobs.Service).Cancel, rivertype.JobStateAvailable},
	}
	actors := []struct {
		name  string
		actor audit.Actor
	}{
		{"user", audit.Actor{UserID: user.ID, Email: user.Email}},
		{"disabled admin", audit.Actor{UserID: disabled.ID, Email: disabled.Email}},
		{"no such account", audit.Actor{UserID: user.ID + 1000, Email: "gone@example.com"}},
		{"system", audit.Actor{}},
	}
	for _, c := range changes {
		id := b.job(t, kindAlpha, c.state)
		for _, a := range actors {
			job, err := c.do(b.svc, ctx, id, a.actor)
			require.ErrorIs(t, err, adminauth.ErrNotAdmin, "%s by %s", c.action, a.name)
			require.Nil(t, job)
		}
		require.Equal(t, c.state, b.state(t, id), c.action)
		require.Empty(t, b.auditEvents(t, c.action, id), c.action)

		_, err := c.do(b.svc, ctx, id+1000, b.admin)
		require.ErrorIs(t, err, adminjobs.ErrNotFound, c.action)
		require.Empty(t, b.auditEvents(t, c.action, id+1000), c.action)

		// The admin may, once.
		_, err = c.do(b.svc, ctx, id, b.admin)
		require.NoError(t, err, c.action)
		require.Len(t, b.auditEvents(t, c.action, id), 1, c.action)
	}
}
