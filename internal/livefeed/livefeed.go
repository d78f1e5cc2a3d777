// Package livefeed tells the console's live pages (server-sent events)
// that a cluster may have changed: one LISTEN connection per process on
// the channel the database's triggers notify with the cluster's id
// (migration 063), fanned out to the streams that follow that cluster. A
// change written through any replica reaches the streams of all of them.
package livefeed

import (
	"context"
	"log/slog"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/pglisten"
)

// Channel is what the triggers notify, with the cluster's id.
const Channel = "kubebyon_cluster"

// Feed fans the database's notifications out to subscribers by cluster.
type Feed struct {
	pool   *pgxpool.Pool
	logger *slog.Logger

	mu        sync.Mutex
	listening bool
	subs      map[int64]map[*subscriber]struct{}
}

// subscriber is woken through a buffer of one: a burst of changes wakes
// it once, and a slow reader never holds the feed up.
type subscriber struct{ ch chan struct{} }

// New returns a feed of pool's database; Run makes it listen.
func New(pool *pgxpool.Pool, logger *slog.Logger) *Feed {
	return &Feed{pool: pool, logger: logger, subs: map[int64]map[*subscriber]struct{}{}}
}

// Subscribe returns a channel that receives when cluster id may have
// changed, and the function that ends the subscription.
func (f *Feed) Subscribe(clusterID int64) (<-chan struct{}, func()) {
	s := &subscriber{ch: make(chan struct{}, 1)}
	f.mu.Lock()
	if f.subs[clusterID] == nil {
		f.subs[clusterID] = map[*subscriber]struct{}{}
	}
	f.subs[clusterID][s] = struct{}{}
	f.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			delete(f.subs[clusterID], s)
			if len(f.subs[clusterID]) == 0 {
				delete(f.subs, clusterID)
			}
		})
	}
}

// Listening reports whether the feed is told of changes now: a stream
// served while it is not would wait for nothing.
func (f *Feed) Listening() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listening
}

// Run listens until ctx ends, again after each failure.
func (f *Feed) Run(ctx context.Context) {
	pglisten.Run(ctx, f.pool, f.logger, Channel, f.setListening, f.notified)
}

// notified wakes the subscribers of the cluster a notification names.
func (f *Feed) notified(payload string) {
	id, err := strconv.ParseInt(payload, 10, 64)
	if err != nil {
		return // a notification without a cluster (a NULL id)
	}
	f.notify(id)
}

// setListening records whether the feed listens. Whatever changed while
// it did not is unknown: every subscriber is woken to look again.
func (f *Feed) setListening(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listening = on
	for _, subs := range f.subs {
		wake(subs)
	}
}

// notify wakes cluster id's subscribers.
func (f *Feed) notify(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	wake(f.subs[id])
}

func wake(subs map[*subscriber]struct{}) {
	for s := range subs {
		select {
		case s.ch <- struct{}{}:
		default: // already woken: it will look once for both
		}
	}
}
