package checks_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The kinds the tests pace: checks knows no kind of its own.
const (
	kindHealth checks.Kind = "test_health"
	kindOther  checks.Kind = "test_other"
)

type testBundle struct {
	pool  *pgxpool.Pool
	q     *queries.Queries
	owner int64
	n     int
}

// setup gives a database of the test's own with a user to own clusters.
func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := testenv.DB(t)
	q := queries.New(pool)
	u, err := q.UserCreate(context.Background(), queries.UserCreateParams{Email: "owner@example.com", Name: "owner", Role: "user"})
	require.NoError(t, err)
	return &testBundle{pool: pool, q: q, owner: u.ID}
}

// cluster adds a cluster in status: pending (as created), ready, deleting
// (delete requested) or deleted.
func (b *testBundle) cluster(t *testing.T, status string) int64 {
	t.Helper()
	ctx := context.Background()
	b.n++
	slug := fmt.Sprintf("c%d", b.n)
	c, err := b.q.ClusterCreate(ctx, queries.ClusterCreateParams{
		OwnerID: b.owner, Name: slug, Slug: slug, KubernetesVersion: "v1.34.0", PublicAccessMode: "nodeport",
	})
	require.NoError(t, err)
	switch status {
	case "pending":
	case "ready":
		n, err := b.q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: c.ID, Generation: c.Generation, Endpoint: "https://" + slug + ".example.com"})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
	case "deleting":
		_, err := b.q.ClusterRequestDelete(ctx, c.ID)
		require.NoError(t, err)
	case "deleted":
		_, err := b.q.ClusterRequestDelete(ctx, c.ID)
		require.NoError(t, err)
		require.NoError(t, b.q.ClusterMarkDeleted(ctx, c.ID))
	default:
		t.Fatalf("unknown status %q", status)
	}
	return c.ID
}

// setDue sets the cluster's check of kind due at at (zero: idle), whatever
// it was before.
func (b *testBundle) setDue(t *testing.T, clusterID int64, kind checks.Kind, at time.Time) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `INSERT INTO cluster_checks (cluster_id, kind, due_at) VALUES ($1, $2, $3)
		ON CONFLICT (cluster_id, kind) DO UPDATE SET due_at = EXCLUDED.due_at`,
		clusterID, string(kind), pgtype.Timestamptz{Time: at, Valid: !at.IsZero()})
	require.NoError(t, err)
}

func (b *testBundle) check(t *testing.T, clusterID int64, kind checks.Kind) queries.ClusterCheck {
	t.Helper()
	c, err := b.q.ClusterCheckGet(context.Background(), queries.ClusterCheckGetParams{ClusterID: clusterID, Kind: string(kind)})
	require.NoError(t, err)
	return c
}

func (b *testBundle) hasCheck(t *testing.T, clusterID int64, kind checks.Kind) bool {
	t.Helper()
	_, err := b.q.ClusterCheckGet(context.Background(), queries.ClusterCheckGetParams{ClusterID: clusterID, Kind: string(kind)})
	if errors.Is(err, pgx.ErrNoRows) {
		return false
	}
	require.NoError(t, err)
	return true
}

// claim runs Claim in a transaction of its own.
func (b *testBundle) claim(t *testing.T, kind checks.Kind, batch int32, now time.Time) (ready []int64, claimed int) {
	t.Helper()
	require.NoError(t, pgx.BeginFunc(context.Background(), b.pool, func(tx pgx.Tx) error {
		var err error
		ready, claimed, err = checks.Claim(context.Background(), queries.New(tx), kind, batch, now)
		return err
	}))
	return ready, claimed
}

// logs is a slog handler that keeps what is logged, debug included.
type logs struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}
func (l *logs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logs) WithGroup(string) slog.Handler      { return l }

// lines are the records logged since the last call, as "LEVEL message
// key=value ...", and forgets them.
func (l *logs) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.records {
		s := r.Level.String() + " " + r.Message
		r.Attrs(func(a slog.Attr) bool {
			s += " " + a.String()
			return true
		})
		out = append(out, s)
	}
	l.records = nil
	return out
}

// TestScheduleKeepsSooner: Schedule makes a check due at the time given,
// creating its row, waking an idle one, bringing a later one forward, but
// never pushing back one that is due sooner.
func TestScheduleKeepsSooner(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)

	tests := []struct {
		name   string
		before time.Time // zero: idle
		noRow  bool
		at     time.Time
		want   time.Time
	}{
		{name: "no row yet", noRow: true, at: now.Add(time.Minute), want: now.Add(time.Minute)},
		{name: "idle", at: now.Add(time.Minute), want: now.Add(time.Minute)},
		{name: "due later", before: now.Add(time.Hour), at: now, want: now},
		{name: "due sooner", before: now.Add(-time.Minute), at: now.Add(time.Hour), want: now.Add(-time.Minute)},
		{name: "leased", before: now.Add(checks.Lease), at: now.Add(time.Second), want: now.Add(time.Second)},
	}
	for _, tt := range tests {
		id := b.cluster(t, "ready")
		if !tt.noRow {
			b.setDue(t, id, kindHealth, tt.before)
		}
		require.NoError(t, checks.Schedule(ctx, b.q, id, kindHealth, tt.at), tt.name)
		c := b.check(t, id, kindHealth)
		require.True(t, c.DueAt.Valid, tt.name)
		require.True(t, tt.want.Equal(c.DueAt.Time), "%s: due at %v, want %v", tt.name, c.DueAt.Time, tt.want)
		require.False(t, b.hasCheck(t, id, kindOther), "%s: other kinds are not scheduled", tt.name)
	}
}

// TestClaim: Claim takes at most batch due checks of its kind, oldest
// first; it leases those of ready clusters (due again when the lease
// ends) and returns them, and counts but idles those of clusters that are
// not ready or being deleted. Checks not due, idle, or of another kind
// stay as they are.
func TestClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().Truncate(time.Second)

	pending := b.cluster(t, "pending")
	b.setDue(t, pending, kindHealth, now.Add(-4*time.Minute))
	r1 := b.cluster(t, "ready")
	b.setDue(t, r1, kindHealth, now.Add(-3*time.Minute))
	deleting := b.cluster(t, "deleting")
	b.setDue(t, deleting, kindHealth, now.Add(-150*time.Second))
	r2 := b.cluster(t, "ready")
	b.setDue(t, r2, kindHealth, now.Add(-2*time.Minute))
	r3 := b.cluster(t, "ready")
	b.setDue(t, r3, kindHealth, now.Add(-time.Minute))
	later := b.cluster(t, "ready")
	b.setDue(t, later, kindHealth, now.Add(time.Hour))
	idle := b.cluster(t, "ready")
	b.setDue(t, idle, kindHealth, time.Time{})
	other := b.cluster(t, "ready")
	b.setDue(t, other, kindOther, now.Add(-10*time.Minute))

	ready, claimed := b.claim(t, kindHealth, 3, now)
	require.Equal(t, []int64{r1}, ready, "the three oldest, one of them ready")
	require.Equal(t, 3, claimed)
	require.True(t, now.Add(checks.Lease).Equal(b.check(t, r1, kindHealth).DueAt.Time), "leased")
	require.False(t, b.check(t, pending, kindHealth).DueAt.Valid, "a cluster not ready goes idle")
	require.False(t, b.check(t, deleting, kindHealth).DueAt.Valid, "a cluster being deleted goes idle")

	ready, claimed = b.claim(t, kindHealth, 3, now)
	require.ElementsMatch(t, []int64{r2, r3}, ready)
	require.Equal(t, 2, claimed)

	ready, claimed = b.claim(t, kindHealth, 3, now)
	require.Empty(t, ready, "leased, idle and later checks are not due")
	require.Zero(t, claimed)
	require.True(t, now.Add(time.Hour).Equal(b.check(t, later, kindHealth).DueAt.Time))
	require.False(t, b.check(t, idle, kindHealth).DueAt.Valid)
	require.True(t, now.Add(-10*time.Minute).Equal(b.check(t, other, kindOther).DueAt.Time), "other kinds are not claimed")

	// A check that goes idle comes back when asked for (its cluster ready
	// again).
	require.NoError(t, checks.Schedule(context.Background(), b.q, pending, kindHealth, now.Add(-time.Second)))
	_, claimed = b.claim(t, kindHealth, 3, now)
	require.Equal(t, 1, claimed)
}

// TestClaimLeaseEnds: a claimed check whose job was lost comes due again
// when its lease ends, and not before.
func TestClaimLeaseEnds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().Truncate(time.Second)
	id := b.cluster(t, "ready")
	b.setDue(t, id, kindHealth, now.Add(-time.Minute))

	// Claimed a lease and a minute ago: the lease is over.
	ready, _ := b.claim(t, kindHealth, 10, now.Add(-checks.Lease-time.Minute))
	require.Equal(t, []int64{id}, ready)
	ready, _ = b.claim(t, kindHealth, 10, now)
	require.Equal(t, []int64{id}, ready, "due again once the lease ended")
	ready, claimed := b.claim(t, kindHealth, 10, now)
	require.Empty(t, ready, "leased until %v", b.check(t, id, kindHealth).DueAt.Time)
	require.Zero(t, claimed)
}

// TestClaimSkipsLocked: two dispatchers claiming at once never claim the
// same check: the second skips the rows the first holds.
func TestClaimSkipsLocked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	var all []int64
	for i := range 4 {
		id := b.cluster(t, "ready")
		b.setDue(t, id, kindHealth, now.Add(-time.Duration(i+1)*time.Minute))
		all = append(all, id)
	}

	tx1, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx1.Rollback(ctx) //nolint:errcheck
	first, claimed, err := checks.Claim(ctx, queries.New(tx1), kindHealth, 2, now)
	require.NoError(t, err)
	require.Equal(t, 2, claimed)

	// The second claim does not wait for the first transaction: a
	// deadline would end it if it did.
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tx2, err := b.pool.Begin(waitCtx)
	require.NoError(t, err)
	defer tx2.Rollback(ctx) //nolint:errcheck
	second, claimed, err := checks.Claim(waitCtx, queries.New(tx2), kindHealth, 10, now)
	require.NoError(t, err)
	require.Equal(t, 2, claimed)

	require.ElementsMatch(t, all, append(append([]int64{}, first...), second...), "each check claimed once")
	require.NoError(t, tx1.Commit(ctx))
	require.NoError(t, tx2.Commit(ctx))
	ready, claimed := b.claim(t, kindHealth, 10, now)
	require.Empty(t, ready)
	require.Zero(t, claimed)
}

// TestClaimAnyState: ClaimAnyState returns and leases the due checks of
// clusters in every state, deleted ones included.
func TestClaimAnyState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	var ids []int64
	for i, status := range []string{"pending", "ready", "deleting", "deleted"} {
		id := b.cluster(t, status)
		b.setDue(t, id, kindHealth, now.Add(-time.Duration(i+1)*time.Minute))
		ids = append(ids, id)
	}
	notDue := b.cluster(t, "deleted")
	b.setDue(t, notDue, kindHealth, now.Add(time.Hour))

	var got []int64
	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		got, err = checks.ClaimAnyState(ctx, queries.New(tx), kindHealth, 3, now)
		return err
	}))
	require.ElementsMatch(t, ids[1:], got, "the three oldest")
	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		got, err = checks.ClaimAnyState(ctx, queries.New(tx), kindHealth, 3, now)
		return err
	}))
	require.Equal(t, ids[:1], got)
	for _, id := range ids {
		require.True(t, now.Add(checks.Lease).Equal(b.check(t, id, kindHealth).DueAt.Time), "cluster %d leased", id)
	}
}

// TestRecorderBackoff: a check that cannot reach its cluster is due again
// after its interval doubled for each failure in a row (give or take a
// tenth), at most MaxBackoff; unreachable since the first failure, with
// the last error kept. The first success clears it all and sets the next
// due time, or idles the check. Going unreachable and coming back are
// logged once each, not per attempt.
func TestRecorderBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	log := &logs{}
	rec := checks.Recorder{Q: b.q, Log: checks.NewTransitions(slog.New(log), kindHealth, 100)}
	id := b.cluster(t, "ready")
	b.setDue(t, id, kindHealth, time.Now())
	interval := time.Minute

	var since time.Time
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, checks.MaxBackoff, checks.MaxBackoff} {
		msg := fmt.Sprintf("dial tcp 10.0.0.1:443: connect: connection refused (%d)", i)
		require.NoError(t, rec.Done(ctx, id, kindHealth, interval, time.Now().Add(interval), checks.Unreachable(errors.New(msg))))
		c := b.check(t, id, kindHealth)
		require.EqualValues(t, i+1, c.Failures)
		require.Equal(t, msg, c.LastError)
		require.True(t, c.UnreachableSince.Valid)
		if i == 0 {
			since = c.UnreachableSince.Time
			require.True(t, since.Equal(c.CheckedAt.Time), "unreachable since the first failure")
		}
		require.True(t, since.Equal(c.UnreachableSince.Time), "failure %d: still unreachable since the first", i+1)
		wait := c.DueAt.Time.Sub(c.CheckedAt.Time)
		require.GreaterOrEqual(t, wait, want*9/10-time.Millisecond, "failure %d", i+1)
		require.LessOrEqual(t, wait, want*11/10+time.Millisecond, "failure %d", i+1)
	}
	require.Equal(t, []string{fmt.Sprintf("WARN cluster unreachable cluster_id=%d", id)}, log.lines(), "one line for six failures")

	next := time.Now().Add(interval).Truncate(time.Second)
	require.NoError(t, rec.Done(ctx, id, kindHealth, interval, next, nil))
	c := b.check(t, id, kindHealth)
	require.True(t, next.Equal(c.DueAt.Time))
	require.Zero(t, c.Failures)
	require.False(t, c.UnreachableSince.Valid)
	require.Empty(t, c.LastError)
	require.Equal(t, []string{fmt.Sprintf("INFO cluster reachable again cluster_id=%d", id)}, log.lines())

	require.NoError(t, rec.Done(ctx, id, kindHealth, interval, time.Time{}, nil))
	require.False(t, b.check(t, id, kindHealth).DueAt.Valid, "zero next: idle until asked")
	require.Empty(t, log.lines(), "reachable all along: nothing to log")

	// A new run of failures starts again from the interval.
	require.NoError(t, rec.Done(ctx, id, kindHealth, interval, time.Time{}, checks.Unreachable(errors.New("x"+strings.Repeat("é", 400)))))
	c = b.check(t, id, kindHealth)
	require.EqualValues(t, 1, c.Failures)
	require.LessOrEqual(t, c.DueAt.Time.Sub(c.CheckedAt.Time), interval*11/10+time.Millisecond)
	require.Equal(t, "x"+strings.Repeat("é", 249), c.LastError, "the error is cut to 500 bytes, on a rune boundary")
	require.Len(t, log.lines(), 1)
}

// TestRecorderOtherOutcomes: an error that is not an UnreachableError is
// returned for River to retry and changes nothing; an UnreachableError
// wrapped in another is still one; a check without a row (run when asked
// directly) records nothing and fails nothing.
func TestRecorderOtherOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	rec := checks.Recorder{Q: b.q}
	due := time.Now().Add(-time.Minute).Truncate(time.Second)

	id := b.cluster(t, "ready")
	b.setDue(t, id, kindHealth, due)
	boom := errors.New("list nodes: database is closed")
	err := rec.Done(ctx, id, kindHealth, time.Minute, time.Now().Add(time.Minute), fmt.Errorf("sync: %w", boom))
	require.ErrorIs(t, err, boom)
	var unreachable *checks.UnreachableError
	require.False(t, errors.As(err, &unreachable))
	c := b.check(t, id, kindHealth)
	require.True(t, due.Equal(c.DueAt.Time), "unchanged")
	require.Zero(t, c.Failures)
	require.False(t, c.CheckedAt.Valid)

	refused := errors.New("connection refused")
	require.NoError(t, rec.Done(ctx, id, kindHealth, time.Minute, time.Time{}, fmt.Errorf("health: %w", checks.Unreachable(refused))))
	c = b.check(t, id, kindHealth)
	require.EqualValues(t, 1, c.Failures, "a wrapped UnreachableError backs off")
	require.Equal(t, "connection refused", c.LastError)

	noRow := b.cluster(t, "ready")
	require.NoError(t, rec.Done(ctx, noRow, kindHealth, time.Minute, time.Now(), nil))
	require.NoError(t, rec.Done(ctx, noRow, kindHealth, time.Minute, time.Now(), checks.Unreachable(refused)))
	require.False(t, b.hasCheck(t, noRow, kindHealth), "no row is made")
}

// TestUnreachable: Unreachable keeps nil nil and marks any other error,
// which it still wraps.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	require.NoError(t, checks.Unreachable(nil))
	cause := errors.New("i/o timeout")
	err := checks.Unreachable(cause)
	require.ErrorIs(t, err, cause)
	var unreachable *checks.UnreachableError
	require.ErrorAs(t, err, &unreachable)
	require.Equal(t, "cluster unreachable: i/o timeout", err.Error())
}

// TestTransitionsLimit: past perMinute changes (of the kind it logs one by
// one) Transitions counts the changes instead, and Flush logs the count
// once; the other kinds' changes go to debug, uncounted.
func TestTransitionsLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	log := &logs{}
	tr := checks.NewTransitions(slog.New(log), kindHealth, 1)
	rec := checks.Recorder{Q: b.q, Log: tr}
	refused := checks.Unreachable(errors.New("connection refused"))

	var ids []int64
	for range 3 {
		id := b.cluster(t, "ready")
		b.setDue(t, id, kindHealth, time.Now())
		b.setDue(t, id, kindOther, time.Now())
		ids = append(ids, id)
	}
	for _, id := range ids {
		require.NoError(t, rec.Done(ctx, id, kindHealth, time.Minute, time.Time{}, refused))
		require.NoError(t, rec.Done(ctx, id, kindHealth, time.Minute, time.Time{}, refused), "a second failure is no change")
		require.NoError(t, rec.Done(ctx, id, kindOther, time.Minute, time.Time{}, refused))
	}
	require.Equal(t, []string{
		fmt.Sprintf("WARN cluster unreachable cluster_id=%d", ids[0]),
		fmt.Sprintf("DEBUG cluster unreachable cluster_id=%d check=%s", ids[0], kindOther),
		fmt.Sprintf("DEBUG cluster unreachable cluster_id=%d check=%s", ids[1], kindOther),
		fmt.Sprintf("DEBUG cluster unreachable cluster_id=%d check=%s", ids[2], kindOther),
	}, log.lines())
	tr.Flush(ctx)
	require.Equal(t, []string{"WARN more clusters changed reachability than are logged one by one unreachable=2 reachable_again=0"}, log.lines())
	tr.Flush(ctx)
	require.Empty(t, log.lines(), "counted once")

	for _, id := range ids {
		require.NoError(t, rec.Done(ctx, id, kindHealth, time.Minute, time.Now().Add(time.Minute), nil))
	}
	require.Empty(t, log.lines(), "still over the limit")
	tr.Flush(ctx)
	require.Equal(t, []string{"WARN more clusters changed reachability than are logged one by one unreachable=0 reachable_again=3"}, log.lines())
}

// TestMakeAllDue: every scheduled check of the kind is due now and
// claimable; idle ones and other kinds stay as they are.
func TestMakeAllDue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	later := b.cluster(t, "ready")
	b.setDue(t, later, kindHealth, now.Add(time.Hour))
	leased := b.cluster(t, "ready")
	b.setDue(t, leased, kindHealth, now.Add(checks.Lease))
	idle := b.cluster(t, "ready")
	b.setDue(t, idle, kindHealth, time.Time{})
	other := b.cluster(t, "ready")
	b.setDue(t, other, kindOther, now.Add(time.Hour))

	n, err := checks.MakeAllDue(ctx, b.q, kindHealth)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	ready, claimed := b.claim(t, kindHealth, 10, now)
	require.ElementsMatch(t, []int64{later, leased}, ready)
	require.Equal(t, 2, claimed)
	require.False(t, b.check(t, idle, kindHealth).DueAt.Valid)
	require.True(t, now.Add(time.Hour).Equal(b.check(t, other, kindOther).DueAt.Time))
}

// TestDispatchUnique: the dispatcher job is tried once and is never
// queued twice while one waits or runs; once it finished, the next tick
// queues again.
func TestDispatchUnique(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{})
	require.NoError(t, err)

	first, err := client.Insert(ctx, checks.DispatchArgs{}, nil)
	require.NoError(t, err)
	require.False(t, first.UniqueSkippedAsDuplicate)
	rivertest.RequireInserted(ctx, t, riverpgxv5.New(b.pool), checks.DispatchArgs{}, &rivertest.RequireInsertedOpts{MaxAttempts: 1})

	for _, state := range []string{"available", "pending", "running", "retryable", "scheduled"} {
		_, err := b.pool.Exec(ctx, `UPDATE river_job SET state = $2, attempt = 1, attempted_at = now(), scheduled_at = now() WHERE id = $1`, first.Job.ID, state)
		require.NoError(t, err)
		again, err := client.Insert(ctx, checks.DispatchArgs{}, nil)
		require.NoError(t, err)
		require.True(t, again.UniqueSkippedAsDuplicate, "while %s", state)
		require.Equal(t, first.Job.ID, again.Job.ID)
	}

	_, err = b.pool.Exec(ctx, `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1`, first.Job.ID)
	require.NoError(t, err)
	next, err := client.Insert(ctx, checks.DispatchArgs{}, nil)
	require.NoError(t, err)
	require.False(t, next.UniqueSkippedAsDuplicate, "queued again after the first finished")
	require.NotEqual(t, first.Job.ID, next.Job.ID)
}

// TestBounded: a bounded copy of a config gives up on a control plane
// that accepts connections and never answers after CallTimeout, and
// leaves the original config as it was.
func TestBounded(t *testing.T) {
	t.Parallel()
	cfg := &rest.Config{Host: "http://" + testenv.HangingListener(t)}
	bounded := checks.Bounded(cfg)
	require.Equal(t, checks.CallTimeout, bounded.Timeout)
	require.Zero(t, cfg.Timeout, "the original is not changed")
	require.Equal(t, cfg.Host, bounded.Host)

	cs, err := kubernetes.NewForConfig(bounded)
	require.NoError(t, err)
	// The outer deadline only keeps a broken Bounded from hanging the
	// test; it must not be what ended the call.
	ctx, cancel := context.WithTimeout(context.Background(), 10*checks.CallTimeout)
	defer cancel()
	start := time.Now()
	err = cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, ctx.Err(), "the call's own timeout ended it")
	require.GreaterOrEqual(t, time.Since(start), checks.CallTimeout)
}
