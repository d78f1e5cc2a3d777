// Package pgwatch keeps a state worked out from PostgreSQL, worked out
// again only when the database notifies that it may have changed (LISTEN
// on a channel its triggers notify), and serves long polls of it: the
// edge's routes and the route agents' routes.
package pgwatch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/pglisten"
)

const (
	// settle is how long the watcher gathers notifications before it
	// tells the waiters: a burst of changes (a thousand installs) wakes
	// them once.
	settle = 100 * time.Millisecond
)

// Watcher keeps a state worked out from the database and wakes whoever
// waits for it to change (long polls). The state is worked out once per
// change, however many callers ask; while the watcher does not listen
// (before Run, or between connections) it is worked out on every ask.
type Watcher[S any] struct {
	pool    *pgxpool.Pool
	logger  *slog.Logger
	channel string
	// desired works the state out; version names it.
	desired func(context.Context) (S, error)
	version func(S) string

	// compute lets one caller at a time work out the state.
	compute sync.Mutex

	mu        sync.Mutex
	listening bool
	// settling is true while a burst of notifications is gathered.
	settling bool
	// gen counts the changes told; state is fresh when it was worked out
	// at the current gen while listening.
	gen        uint64
	state      S
	stateGen   uint64
	stateValid bool
	// changed is closed (and replaced) when the state may have changed.
	changed chan struct{}
}

// New returns a watcher of the state desired works out from pool, named
// by version, which the database says may have changed with a
// notification on channel.
func New[S any](pool *pgxpool.Pool, logger *slog.Logger, channel string, desired func(context.Context) (S, error), version func(S) string) *Watcher[S] {
	return &Watcher[S]{pool: pool, logger: logger, channel: channel, desired: desired, version: version, changed: make(chan struct{})}
}

// Run listens for changes until ctx ends, again after each failure.
func (w *Watcher[S]) Run(ctx context.Context) {
	pglisten.Run(ctx, w.pool, w.logger, w.channel, w.setListening, w.notified)
}

// notified says the state may have changed once per burst: the first
// notification of one waits settle, and those that come meanwhile go
// with it.
func (w *Watcher[S]) notified(string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.settling {
		return
	}
	w.settling = true
	time.AfterFunc(settle, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.settling = false
		w.bumpLocked()
	})
}

// setListening records whether the watcher listens, and, in the same
// step, that the state may have changed meanwhile.
func (w *Watcher[S]) setListening(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.listening = on
	w.bumpLocked()
}

// Listening reports whether the watcher is told of changes now.
func (w *Watcher[S]) Listening() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.listening
}

// bump says the state may have changed.
func (w *Watcher[S]) bump() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bumpLocked()
}

func (w *Watcher[S]) bumpLocked() {
	w.gen++
	close(w.changed)
	w.changed = make(chan struct{})
}

// Current is the desired state, and a channel closed when it may change
// after that.
func (w *Watcher[S]) Current(ctx context.Context) (S, <-chan struct{}, error) {
	w.compute.Lock()
	defer w.compute.Unlock()
	w.mu.Lock()
	gen, changed := w.gen, w.changed
	if w.listening && w.stateValid && w.stateGen == gen {
		s := w.state
		w.mu.Unlock()
		return s, changed, nil
	}
	w.mu.Unlock()

	s, err := w.desired(ctx)
	if err != nil {
		var zero S
		return zero, nil, err
	}
	w.mu.Lock()
	w.state, w.stateGen, w.stateValid = s, gen, true
	w.mu.Unlock()
	return s, changed, nil
}

// recheckEvery is how often Next looks at the state again without being
// woken: a lost notification delays a change by no more.
const recheckEvery = 10 * time.Second

// Next is the desired state as soon as its version is not have, waiting
// at most wait for that; changed is false when the wait ended first.
func (w *Watcher[S]) Next(ctx context.Context, have string, wait time.Duration) (st S, changed bool, err error) {
	deadline := time.Now().Add(wait)
	for {
		st, woken, err := w.Current(ctx)
		if err != nil {
			return st, false, err
		}
		if w.version(st) != have {
			return st, true, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return st, false, nil
		}
		timer := time.NewTimer(min(left, recheckEvery))
		select {
		case <-woken:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			var zero S
			return zero, false, ctx.Err()
		}
		timer.Stop()
	}
}
