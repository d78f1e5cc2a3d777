package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/queries"
)

// batchDivisor sets a Limiter's batch: a process sends a subject's hits to
// PostgreSQL at least every Limit/batchDivisor hits (rounded up).
const batchDivisor = 10

// batch is how many hits of rule a Limiter sends at most at once: the hits
// it lets through without PostgreSQL are fewer (batch-1), and every hit
// within batch of the limit goes to PostgreSQL.
func batch(rule Rule) int32 {
	return max(1, (rule.Limit+batchDivisor-1)/batchDivisor)
}

// Slack is how many hits of rule over its limit replicas processes, each
// with its own Limiter, can let through together in the worst case: the
// hits each other replica holds unsent.
func Slack(rule Rule, replicas int) int32 {
	return int32(max(replicas-1, 0)) * (batch(rule) - 1)
}

// Limiter is Hit with a per-process front: see the package comment. It is
// for rules that are never Reset (its counts would outlive the reset). Safe
// for concurrent use.
type Limiter struct {
	q *queries.Queries

	mu       sync.Mutex
	subjects *simplelru.LRU[string, *entry]
	evicted  []*entry // by the last Add, to be sent (under mu)
}

// entry is what a process knows of one subject's hits against one rule.
type entry struct {
	key    string
	window time.Duration

	mu sync.Mutex // held across a round trip to PostgreSQL
	// start is the current window's; seen and prevSeen count the hits of
	// it and of the window before it: what PostgreSQL answered last, plus
	// this process's hits since. pending and prevPending are those hits,
	// not yet sent.
	start                time.Time
	seen, prevSeen       int32
	pending, prevPending int32
	// synced is whether seen comes from PostgreSQL in this window: a new
	// entry, or one in a new window, asks it first.
	synced bool
	// gone is set once the entry is evicted (and its hits sent).
	gone bool
}

// NewLimiter keeps the counts of at most subjects (rule, subject) pairs,
// the least recently hit evicted first (and their unsent hits sent).
func NewLimiter(q *queries.Queries, subjects int) *Limiter {
	l := &Limiter{q: q}
	lru, err := simplelru.NewLRU(max(subjects, 1), func(_ string, e *entry) { l.evicted = append(l.evicted, e) })
	if err != nil { // only for a size below 1
		panic(fmt.Sprintf("ratelimit: %v", err))
	}
	l.subjects = lru
	return l
}

// Hit counts one hit of subject against rule at now, as Hit does: a single
// process refuses the same hits Hit would.
func (l *Limiter) Hit(ctx context.Context, rule Rule, subject string, now time.Time) (Decision, error) {
	key := rule.Name + ":" + subject
	start := now.Truncate(rule.Window)
	for {
		e, evicted := l.entry(key, rule)
		var errs []error
		for _, ev := range evicted {
			errs = append(errs, l.send(ctx, ev))
		}
		if err := errors.Join(errs...); err != nil {
			return Decision{}, err
		}
		e.mu.Lock()
		if e.gone { // evicted meanwhile: its hits are in PostgreSQL
			e.mu.Unlock()
			continue
		}
		d, err := l.hit(ctx, e, rule, subject, start, now)
		e.mu.Unlock()
		return d, err
	}
}

// entry finds or adds key's entry, returning the entries the addition
// evicted.
func (l *Limiter) entry(key string, rule Rule) (*entry, []*entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.subjects.Get(key); ok {
		return e, nil
	}
	e := &entry{key: key, window: rule.Window}
	l.subjects.Add(key, e)
	evicted := l.evicted
	l.evicted = nil
	return e, evicted
}

// hit counts one hit in e (locked).
func (l *Limiter) hit(ctx context.Context, e *entry, rule Rule, subject string, start, now time.Time) (Decision, error) {
	switch {
	case start.Before(e.start):
		// A hit of the window before, judged after one of this window
		// (a request that waited for the lock at the turn): PostgreSQL
		// counts and judges it alone.
		return Hit(ctx, l.q, rule, subject, now)
	case start.Equal(e.start):
	case start.Equal(e.start.Add(rule.Window)):
		e.prevSeen, e.prevPending = e.seen, e.pending
		e.start, e.seen, e.pending, e.synced = start, 0, 0, false
	default: // a new entry, or none of its hits count any more
		e.prevSeen, e.prevPending = 0, 0
		e.start, e.seen, e.pending, e.synced = start, 0, 0, false
	}
	// Let the hit through here only while a whole batch more would still
	// be within the limit, as this process knows the counts; PostgreSQL
	// judges every other hit, with this process's unsent ones.
	b := batch(rule)
	if e.synced && e.pending+1 < b && decide(rule, start, now, e.seen+b, e.prevSeen).Allowed {
		e.seen++
		e.pending++
		return Decision{Allowed: true}, nil
	}
	row, err := l.q.RateLimitAdd(ctx, queries.RateLimitAddParams{
		Key:           e.key,
		WindowStart:   pgtype.Timestamptz{Time: start, Valid: true},
		Hits:          e.pending + 1,
		PreviousStart: pgtype.Timestamptz{Time: start.Add(-rule.Window), Valid: true},
		PreviousHits:  e.prevPending,
	})
	if err != nil {
		return Decision{}, fmt.Errorf("rate limit %s: %w", rule.Name, err)
	}
	e.seen, e.prevSeen = row.Count, row.Previous
	e.pending, e.prevPending = 0, 0
	e.synced = true
	return decide(rule, start, now, row.Count, row.Previous), nil
}

// send counts an evicted entry's unsent hits in PostgreSQL.
func (l *Limiter) send(ctx context.Context, e *entry) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gone = true
	if e.pending == 0 && e.prevPending == 0 {
		return nil
	}
	_, err := l.q.RateLimitAdd(ctx, queries.RateLimitAddParams{
		Key:           e.key,
		WindowStart:   pgtype.Timestamptz{Time: e.start, Valid: true},
		Hits:          e.pending,
		PreviousStart: pgtype.Timestamptz{Time: e.start.Add(-e.window), Valid: true},
		PreviousHits:  e.prevPending,
	})
	if err != nil {
		return fmt.Errorf("rate limit %s: send evicted hits: %w", e.key, err)
	}
	e.pending, e.prevPending = 0, 0
	return nil
}
