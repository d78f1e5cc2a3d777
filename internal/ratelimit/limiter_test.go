package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestLimiterRefusesAsHit hits one subject through a Limiter and another
// through Hit at the same instants, across window turns: a single process
// decides every hit as Hit does, Retry-After included.
func TestLimiterRefusesAsHit(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	q := queries.New(pool)
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		rule Rule
		// n hits, step apart, from t0 plus offset
		n      int
		step   time.Duration
		offset time.Duration
	}{
		{"limit 1", Rule{"t-1", 1, time.Minute}, 12, 15 * time.Second, 0},
		{"limit 10, a burst", Rule{"t-burst", 10, time.Minute}, 40, time.Millisecond, 0},
		{"limit 10 across three windows", Rule{"t-10", 10, time.Minute}, 90, 2 * time.Second, 7 * time.Second},
		{"limit 100 across three windows", Rule{"t-100", 100, time.Minute}, 450, 400 * time.Millisecond, 0},
		{"limit 100, a burst at a window's end", Rule{"t-end", 100, time.Minute}, 250, 20 * time.Millisecond, 57 * time.Second},
		{"the join script's", JoinScriptPerIP, 600, 5 * time.Second, time.Minute},
		{"the join reports'", JoinEventsPerIP, 3000, 400 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			l := NewLimiter(q, 10)
			refused, first := 0, 0
			for i := range tt.n {
				now := t0.Add(tt.offset + time.Duration(i)*tt.step)
				want, err := Hit(ctx, q, tt.rule, "direct", now)
				require.NoError(t, err)
				got, err := l.Hit(ctx, tt.rule, "front", now)
				require.NoError(t, err)
				require.Equal(t, want, got, "hit %d at %s", i+1, now.Format(time.StampMilli))
				if !got.Allowed {
					refused++
					if first == 0 {
						first = i + 1
					}
				}
			}
			require.NotZero(t, refused, "the limit was reached")
			if tt.step*time.Duration(tt.n) < tt.rule.Window-tt.offset {
				require.Equal(t, int(tt.rule.Limit)+1, first, "a burst within a window is refused past the limit")
			}
		})
	}
}

// TestLimiterReplicas hits one subject through several Limiters on one
// database, as replicas would: together they let through at least the
// limit and at most Slack more.
func TestLimiterReplicas(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	q := queries.New(pool)
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	rule := Rule{"replicas", 100, time.Hour}
	require.EqualValues(t, 9, Slack(rule, 2))
	require.EqualValues(t, 18, Slack(rule, 3))
	require.EqualValues(t, 0, Slack(rule, 1))
	tests := []struct {
		name     string
		replicas int
		// next names the replica taking hit i.
		next func(i int) int
	}{
		{"two, alternating", 2, func(i int) int { return i % 2 }},
		{"two, in bursts of 7", 2, func(i int) int { return i / 7 % 2 }},
		{"two, in bursts of 9 and 1", 2, func(i int) int { return min(i%10, 1) }},
		{"two, one after the other", 2, func(i int) int { return min(i/95, 1) }},
		{"three, in turn", 3, func(i int) int { return i % 3 }},
		{"three, in bursts of 9", 3, func(i int) int { return i / 9 % 3 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var limiters []*Limiter
			for range tt.replicas {
				limiters = append(limiters, NewLimiter(q, 10))
			}
			allowed := 0
			for i := range 3 * int(rule.Limit) {
				d, err := limiters[tt.next(i)].Hit(ctx, rule, tt.name, now)
				require.NoError(t, err)
				if d.Allowed {
					allowed++
				}
			}
			require.GreaterOrEqual(t, allowed, int(rule.Limit))
			require.LessOrEqual(t, allowed, int(rule.Limit+Slack(rule, tt.replicas)))
		})
	}

	t.Run("two, concurrently", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		limiters := []*Limiter{NewLimiter(q, 10), NewLimiter(q, 10)}
		var allowed atomic.Int32
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for range 40 {
					d, err := limiters[g%2].Hit(ctx, rule, "concurrently", now)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						allowed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		require.GreaterOrEqual(t, allowed.Load(), rule.Limit)
		require.LessOrEqual(t, allowed.Load(), rule.Limit+Slack(rule, 2))
	})
}

// TestLimiterKeepsFewSubjects checks that a Limiter keeps a bounded number
// of subjects, sends the hits of those it evicts, and still refuses a
// subject over the limit that it forgot.
func TestLimiterKeepsFewSubjects(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	q := queries.New(pool)
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	rule := Rule{"few", 50, time.Hour}
	l := NewLimiter(q, 4)

	for round := range 3 {
		for s := range 10 {
			d, err := l.Hit(ctx, rule, fmt.Sprint("s", s), now.Add(time.Duration(round)*time.Second))
			require.NoError(t, err)
			require.True(t, d.Allowed)
		}
	}
	require.Equal(t, 4, l.subjects.Len())
	unsent := int32(0)
	for _, e := range l.subjects.Values() {
		unsent += e.pending
	}
	var counted int32
	require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(sum(count), 0)::int FROM rate_limits WHERE key LIKE 'few:s%'`).Scan(&counted))
	require.EqualValues(t, 30, counted+unsent, "every hit is counted or held")

	for i := range 50 {
		d, err := l.Hit(ctx, rule, "x", now)
		require.NoError(t, err)
		require.True(t, d.Allowed, "hit %d", i+1)
	}
	for s := range 4 { // evicts x
		_, err := l.Hit(ctx, rule, fmt.Sprint("s", s), now)
		require.NoError(t, err)
	}
	_, kept := l.subjects.Peek("few:x")
	require.False(t, kept)
	d, err := l.Hit(ctx, rule, "x", now)
	require.NoError(t, err)
	require.False(t, d.Allowed, "the 51st hit, after x was forgotten")
}

// TestLimiterWrites counts the writes to rate_limits (with a trigger) for
// a client well under the join script's limit: one per hit through Hit,
// one per batch through a Limiter.
func TestLimiterWrites(t *testing.T) {
	t.Parallel()
	const hits = 60
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		hit    func(ctx context.Context, q *queries.Queries, now time.Time) (Decision, error)
		writes int
	}{
		{"Hit", func(ctx context.Context, q *queries.Queries, now time.Time) (Decision, error) {
			return Hit(ctx, q, JoinScriptPerIP, "192.0.2.1", now)
		}, hits},
		// The first hit asks PostgreSQL, then one batch of 12 per 12 hits.
		{"Limiter", func() func(ctx context.Context, q *queries.Queries, now time.Time) (Decision, error) {
			var l *Limiter
			return func(ctx context.Context, q *queries.Queries, now time.Time) (Decision, error) {
				if l == nil {
					l = NewLimiter(q, 10)
				}
				return l.Hit(ctx, JoinScriptPerIP, "192.0.2.1", now)
			}
		}(), 1 + (hits-1)/12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := testenv.DB(t)
			countWrites(t, pool)
			q := queries.New(pool)
			for i := range hits {
				d, err := tt.hit(ctx, q, now.Add(time.Duration(i)*time.Second))
				require.NoError(t, err)
				require.True(t, d.Allowed)
			}
			var writes int
			require.NoError(t, pool.QueryRow(ctx, `SELECT n FROM rate_limit_writes`).Scan(&writes))
			require.Equal(t, tt.writes, writes)
		})
	}
}

// countWrites counts every row inserted into or updated in rate_limits in
// rate_limit_writes.
func countWrites(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
CREATE TABLE rate_limit_writes (n int NOT NULL);
INSERT INTO rate_limit_writes VALUES (0);
CREATE FUNCTION count_rate_limit_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE rate_limit_writes SET n = n + 1;
  RETURN NULL;
END $$;
CREATE TRIGGER count_writes AFTER INSERT OR UPDATE ON rate_limits
  FOR EACH ROW EXECUTE FUNCTION count_rate_limit_write();`)
	require.NoError(t, err)
}
