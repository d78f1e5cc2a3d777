// Package sessioncache keeps the signed-in sessions that every console
// page reads (the session with its user, SessionFindSignedIn) in memory
// for a few seconds (issue 36), so that a page asks the database for
// what it shows and no more. Every replica forgets a session as soon as
// the database says what it holds may have changed: migration 067's
// triggers notify kubebyon_session with the session's token hash, the
// user's id, or everyone; the replica that made a change forgets at once
// (Forget*). A cache that does not listen (before Run, or between
// connections) holds nothing: each page reads its session again.
package sessioncache

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/pglisten"
	"github.com/kubebyon/kubebyon/queries"
)

// Channel is what the triggers notify.
const Channel = "kubebyon_session"

const (
	// TTL is how long a session read is used at most (serve's): the
	// bound on what a lost notification could leave stale.
	TTL = 5 * time.Second
	// size is how many sessions are kept: the browsers active within TTL.
	size = 10_000
	// maxUsers bounds the users whose changes are counted; past it the
	// cache starts afresh.
	maxUsers = 100_000
)

// Session is a signed-in session as the session store reads it: the
// session's data and the row read with it.
type Session struct {
	Data []byte
	Row  queries.SessionFindSignedInRow
}

type entry struct {
	Session
	// userGen is the user's change count when the session was read: a
	// change of theirs since makes the entry stale.
	userGen uint64
}

// Cache is the sessions kept in memory, by token hash.
type Cache struct {
	pool    *pgxpool.Pool
	logger  *slog.Logger
	channel string
	lru     *expirable.LRU[string, entry]

	mu        sync.Mutex
	listening bool
	// epoch counts every forgetting: a read that saw it change while it
	// asked the database is not kept (Put), as it may predate the change.
	epoch uint64
	// userGen counts each user's changes.
	userGen map[int64]uint64
}

// New returns a cache of pool's sessions, each kept ttl at most (TTL);
// Run makes it listen.
func New(pool *pgxpool.Pool, logger *slog.Logger, ttl time.Duration) *Cache {
	return &Cache{pool: pool, logger: logger, channel: Channel, lru: expirable.NewLRU[string, entry](size, nil, ttl), userGen: map[int64]uint64{}}
}

// OnChannel makes the cache listen on name instead of Channel, before
// Run: for a test that shows what the cache forgets with no notification
// from the database.
func (c *Cache) OnChannel(name string) *Cache {
	c.channel = name
	return c
}

// Ticket is taken before the database is asked for a session, and given
// to Put with what it answered.
type Ticket uint64

// Get is the session of the token hash, if kept and still fresh.
func (c *Cache) Get(token string) (Session, bool) {
	if c == nil {
		return Session{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.listening {
		return Session{}, false
	}
	e, ok := c.lru.Get(token)
	if !ok || e.userGen != c.userGen[e.Row.User.ID] {
		return Session{}, false
	}
	return e.Session, true
}

// Ticket is the ticket of a read of the database that starts now.
func (c *Cache) Ticket() Ticket {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return Ticket(c.epoch)
}

// Put keeps the session of the token hash that the database answered
// after t was taken, unless something was forgotten since: the answer
// may predate that change.
func (c *Cache) Put(t Ticket, token string, s Session) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.listening || uint64(t) != c.epoch {
		return
	}
	c.lru.Add(token, entry{Session: s, userGen: c.userGen[s.Row.User.ID]})
}

// ForgetToken forgets the session of the token hash: it was saved or
// deleted.
func (c *Cache) ForgetToken(token string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.lru.Remove(token)
}

// ForgetUser forgets every session of the user: something the session
// query reads of them may have changed.
func (c *Cache) ForgetUser(id int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	if len(c.userGen) >= maxUsers {
		c.forgetAllLocked()
		return
	}
	c.userGen[id]++
}

// ForgetAll forgets every session.
func (c *Cache) ForgetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetAllLocked()
}

func (c *Cache) forgetAllLocked() {
	c.epoch++
	c.lru.Purge()
	clear(c.userGen)
}

// Listening reports whether the cache is told of changes, and so keeps
// sessions.
func (c *Cache) Listening() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listening
}

// Run listens until ctx ends, again after each failure.
func (c *Cache) Run(ctx context.Context) {
	pglisten.Run(ctx, c.pool, c.logger, c.channel, c.setListening, c.notified)
}

// notified forgets what a notification names (migration 067); one it
// cannot read forgets everything.
func (c *Cache) notified(payload string) {
	if token, ok := strings.CutPrefix(payload, "t:"); ok {
		c.ForgetToken(token)
		return
	}
	if user, ok := strings.CutPrefix(payload, "u:"); ok {
		if id, err := strconv.ParseInt(user, 10, 64); err == nil {
			c.ForgetUser(id)
			return
		}
	}
	c.ForgetAll()
}

// setListening records whether the cache listens. Whatever changed while
// it did not is unknown: it starts afresh either way.
func (c *Cache) setListening(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listening = on
	c.forgetAllLocked()
}
