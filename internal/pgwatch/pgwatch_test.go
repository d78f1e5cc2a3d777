package pgwatch_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/pgwatch"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// channel has capitals and a dash: LISTEN must quote it as NOTIFY names it.
const channel = "Watched-State"

// eventually is the bound for what a notification sets off: the settle
// time and a reconnection (2s) are far below it.
const eventually = 15 * time.Second

// state is what the tests watch: the value of the one row of a table of
// the test's own, with the value as its version.
type state struct{ Value int }

func version(s state) string { return strconv.Itoa(s.Value) }

type testBundle struct {
	pool    *pgxpool.Pool
	watcher *pgwatch.Watcher[state]
	// computed counts the times the state was worked out.
	computed atomic.Int64
	// fail makes working the state out fail.
	fail atomic.Bool
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{pool: testenv.DB(t)}
	_, err := b.pool.Exec(context.Background(), `CREATE TABLE watched (value INT NOT NULL); INSERT INTO watched VALUES (1)`)
	require.NoError(t, err)
	desired := func(ctx context.Context) (state, error) {
		b.computed.Add(1)
		if b.fail.Load() {
			return state{}, errors.New("state unavailable")
		}
		var s state
		err := b.pool.QueryRow(ctx, "SELECT value FROM watched").Scan(&s.Value)
		return s, err
	}
	b.watcher = pgwatch.New(b.pool, slog.New(slog.NewTextHandler(io.Discard, nil)), channel, desired, version)
	return b
}

// run runs the watcher until the test ends, and waits until it listens.
func (b *testBundle) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.watcher.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, b.watcher.Listening, eventually, 10*time.Millisecond)
}

// set changes the row without telling anyone.
func (b *testBundle) set(t *testing.T, v int) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), "UPDATE watched SET value = $1", v)
	require.NoError(t, err)
}

// notify sends a notification on ch, as the project's triggers do.
func (b *testBundle) notify(t *testing.T, ch string) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), "SELECT pg_notify($1, '')", ch)
	require.NoError(t, err)
}

func (b *testBundle) current(t *testing.T) (state, <-chan struct{}) {
	t.Helper()
	s, changed, err := b.watcher.Current(context.Background())
	require.NoError(t, err)
	require.NotNil(t, changed)
	return s, changed
}

func closed(ch <-chan struct{}) func() bool {
	return func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
}

// TestWorkedOutOnEveryAskWhileNotListening: before Run the watcher is
// told of no change, so it reads the database on every ask.
func TestWorkedOutOnEveryAskWhileNotListening(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.False(t, b.watcher.Listening())

	s, _ := b.current(t)
	require.Equal(t, 1, s.Value)
	b.set(t, 2)
	s, _ = b.current(t)
	require.Equal(t, 2, s.Value)
	s, _ = b.current(t)
	require.Equal(t, 2, s.Value)
	require.Equal(t, int64(3), b.computed.Load())
}

// TestWorkedOutAgainAfterNotify: while listening the state is worked out
// once, kept while nothing is notified (even if the table changed), and
// worked out again after a NOTIFY on its channel, which wakes whoever
// holds the channel Current gave. A NOTIFY on another channel does not.
func TestWorkedOutAgainAfterNotify(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.run(t)

	s, changed := b.current(t)
	require.Equal(t, 1, s.Value)
	s, again := b.current(t)
	require.Equal(t, 1, s.Value)
	require.Equal(t, int64(1), b.computed.Load(), "worked out once while nothing changed")
	require.Equal(t, changed, again)

	// A change nobody notifies is not seen.
	b.set(t, 2)
	s, _ = b.current(t)
	require.Equal(t, 1, s.Value)

	// Nor one notified on another channel, nor on the name in lower case
	// (what PostgreSQL folds an unquoted name to).
	b.notify(t, "other")
	b.notify(t, "watched-state")
	require.Never(t, closed(changed), time.Second, 20*time.Millisecond)
	s, _ = b.current(t)
	require.Equal(t, 1, s.Value)
	require.Equal(t, int64(1), b.computed.Load())

	b.notify(t, channel)
	require.Eventually(t, closed(changed), eventually, 10*time.Millisecond)
	s, next := b.current(t)
	require.Equal(t, 2, s.Value)
	require.Equal(t, int64(2), b.computed.Load())
	require.False(t, closed(next)(), "the new channel waits for the next change")

	// And again, with a trigger notifying as the project's do.
	_, err := b.pool.Exec(context.Background(), `
CREATE FUNCTION watched_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('`+channel+`', '');
    RETURN NULL;
END $$;
CREATE TRIGGER watched_notify AFTER UPDATE ON watched FOR EACH STATEMENT EXECUTE FUNCTION watched_notify();`)
	require.NoError(t, err)
	b.set(t, 3)
	require.Eventually(t, closed(next), eventually, 10*time.Millisecond)
	s, _ = b.current(t)
	require.Equal(t, 3, s.Value)
}

// TestBurstWakesOnce: many notifications at once wake the waiters once
// and the state is worked out once for them.
func TestBurstWakesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.run(t)
	_, changed := b.current(t)
	require.Equal(t, int64(1), b.computed.Load())

	// Distinct payloads: PostgreSQL folds identical notifications of a
	// transaction into one. Committed together, they arrive together.
	err := pgx.BeginFunc(context.Background(), b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(context.Background(), "UPDATE watched SET value = 7"); err != nil {
			return err
		}
		_, err := tx.Exec(context.Background(), "SELECT pg_notify($1, i::text) FROM generate_series(1, 500) i", channel)
		return err
	})
	require.NoError(t, err)

	require.Eventually(t, closed(changed), eventually, 10*time.Millisecond)
	var wg sync.WaitGroup
	got := make([]state, 20)
	errs := make([]error, len(got))
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _, errs[i] = b.watcher.Current(context.Background())
		}()
	}
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i])
		require.Equal(t, 7, got[i].Value)
	}
	_, next := b.current(t)
	require.Never(t, closed(next), time.Second, 20*time.Millisecond)
	require.Equal(t, int64(2), b.computed.Load(), "one burst, one more working out, however many ask")
}

// TestNext: a long poll with the current version waits; a NOTIFY wakes
// every long poll with the new state; without one, it ends after its
// wait with the old state; with an older version it answers at once.
func TestNext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.run(t)
	ctx := context.Background()

	// An older version is answered at once.
	start := time.Now()
	s, changed, err := b.watcher.Next(ctx, "0", time.Minute)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, 1, s.Value)
	require.Less(t, time.Since(start), 5*time.Second)

	// Nothing changes: the wait ends with the state the poller has.
	start = time.Now()
	s, changed, err = b.watcher.Next(ctx, "1", 500*time.Millisecond)
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, 1, s.Value)
	require.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond)

	// A NOTIFY that changes nothing does not end the wait either.
	start = time.Now()
	notified := make(chan error, 1)
	go func() {
		_, err := b.pool.Exec(ctx, "SELECT pg_notify($1, '')", channel)
		notified <- err
	}()
	s, changed, err = b.watcher.Next(ctx, "1", time.Second)
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, 1, s.Value)
	require.GreaterOrEqual(t, time.Since(start), time.Second)
	require.NoError(t, <-notified)

	// Long polls wake with the new state.
	type result struct {
		s       state
		changed bool
		err     error
		took    time.Duration
	}
	results := make(chan result, 5)
	for range cap(results) {
		go func() {
			start := time.Now()
			s, changed, err := b.watcher.Next(ctx, "1", time.Minute)
			results <- result{s, changed, err, time.Since(start)}
		}()
	}
	// They wait (no answer before the change)...
	require.Never(t, func() bool { return len(results) > 0 }, 300*time.Millisecond, 10*time.Millisecond)
	b.set(t, 2)
	b.notify(t, channel)
	for range cap(results) {
		select {
		case r := <-results:
			require.NoError(t, r.err)
			require.True(t, r.changed)
			require.Equal(t, 2, r.s.Value)
			require.Less(t, r.took, 30*time.Second, "woken by the notification, not by the end of the wait")
		case <-time.After(eventually):
			t.Fatal("a long poll was not woken by the notification")
		}
	}
}

// TestNextEndsWithItsContext: a long poll whose request ends returns the
// context's error.
func TestNextEndsWithItsContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.run(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s, changed, err := b.watcher.Next(ctx, "1", time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, changed)
	require.Equal(t, state{}, s)
}

// TestErrors: a failure to work the state out is the caller's error, and
// is not kept: the next ask works it out again.
func TestErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.run(t)
	ctx := context.Background()

	b.fail.Store(true)
	_, changed, err := b.watcher.Current(ctx)
	require.ErrorContains(t, err, "state unavailable")
	require.Nil(t, changed)
	_, ok, err := b.watcher.Next(ctx, "1", time.Minute)
	require.ErrorContains(t, err, "state unavailable")
	require.False(t, ok)

	b.fail.Store(false)
	s, _ := b.current(t)
	require.Equal(t, 1, s.Value)
}

// TestListensAgainAfterLosingItsConnection: when its connection ends the
// watcher stops trusting what it kept, wakes the waiters, and listens
// again; what changed meanwhile is seen without a notification.
func TestListensAgainAfterLosingItsConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.run(t)
	ctx := context.Background()
	s, changed := b.current(t)
	require.Equal(t, 1, s.Value)

	b.set(t, 2) // not notified
	var killed int
	require.NoError(t, b.pool.QueryRow(ctx, `
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN %'`).Scan(&killed))
	require.Equal(t, 1, killed, "the watcher's one listening connection")

	require.Eventually(t, closed(changed), eventually, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		if !b.watcher.Listening() {
			return false
		}
		s, _, err := b.watcher.Current(ctx)
		return err == nil && s.Value == 2
	}, eventually, 10*time.Millisecond)

	// Listening again, it is told of changes again.
	s, changed = b.current(t)
	require.Equal(t, 2, s.Value)
	b.set(t, 3)
	b.notify(t, channel)
	require.Eventually(t, closed(changed), eventually, 10*time.Millisecond)
	s, _ = b.current(t)
	require.Equal(t, 3, s.Value)
}

// TestStopsWithItsContext: Run returns when its context ends, and the
// watcher, no longer told of changes, reads the database on every ask.
func TestStopsWithItsContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.watcher.Run(ctx) }()
	require.Eventually(t, b.watcher.Listening, eventually, 10*time.Millisecond)
	_, changed := b.current(t)

	cancel()
	select {
	case <-done:
	case <-time.After(eventually):
		t.Fatal("Run did not return after its context ended")
	}
	require.False(t, b.watcher.Listening())
	require.True(t, closed(changed)(), "waiters are woken: nobody tells them of changes any more")

	n := b.computed.Load()
	b.set(t, 5)
	s, _ := b.current(t)
	require.Equal(t, 5, s.Value)
	s, _ = b.current(t)
	require.Equal(t, 5, s.Value)
	require.Equal(t, n+2, b.computed.Load())
}
