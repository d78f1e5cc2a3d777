package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/sessioncache"
	"github.com/kubebyon/kubebyon/queries"
)

// sessionStore keeps scs sessions in PostgreSQL. It stores a keyed hash of
// each token, never the token: whoever reads the database cannot use a row
// as a cookie. It takes the request's context (scs.CtxStore), so that a
// database that hangs holds a request no longer than its deadline
// (pgxstore runs every query with context.Background()).
//
// A session ends idle after the store's idle time: each save moves its
// expiry to that long from now (never past its absolute lifetime, the
// expiry scs gives), and keepSessionAlive saves a session in use at least
// once every touchEvery.
//
// The idle time is read at each find and save (an admin setting, kept in
// memory): a session is found only when saved within the idle time in
// force now, which may have shrunk since its save.
//
// A signed-in session read with its user is kept in cache, when there is
// one, for the next pages (sessioncache); saving or deleting a session
// forgets it there.
//
// It runs its own queries: it is the storage adapter scs calls, not a
// page, and the pages' actions go through the domain services.
type sessionStore struct {
	pool  *pgxpool.Pool
	box   *secrets.Box
	idle  func() time.Duration
	cache *sessioncache.Cache
}

// idleSeconds is the idle time for the queries; none (zero) reads as a
// century.
func (s sessionStore) idleSeconds() int64 {
	if d := s.idle(); d > 0 {
		return int64(d / time.Second)
	}
	return 100 * 365 * 24 * 3600
}

// sessionSeen is the session key of when keepSessionAlive last saved the
// session, in Unix seconds.
const sessionSeen = "seen"

// keepSessionAlive saves a stored session when it was last saved over
// touchEvery ago, which moves its idle expiry on (sessionStore). Other
// requests leave the session unmodified, so that scs writes it only when
// its data changed. A browser without a stored session gets none from here.
func (h *Handlers) keepSessionAlive(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		// Unix seconds: the session codec keeps strings and int64s.
		seen := time.Unix(h.sessions.GetInt64(ctx, sessionSeen), 0)
		if h.sessions.Token(ctx) != "" && time.Since(seen) > touchEvery {
			h.sessions.Put(ctx, sessionSeen, time.Now().Unix())
		}
		return next(c)
	}
}

var _ scs.CtxStore = sessionStore{}

// tokenHash is what is stored of a session token.
func (s sessionStore) tokenHash(token string) string {
	return s.box.MAC("session-token", []byte(token))
}

// signedIn is what the store read with a session: the signed-in user
// behind it, for loadUser, which then asks no more. withSignedIn puts one
// in each request's context, before the session is loaded.
type signedIn struct {
	found bool
	row   queries.SessionFindSignedInRow
}

type signedInKey struct{}

// withSignedIn gives the request a place for what the store reads with
// its session (signedIn).
func (h *Handlers) withSignedIn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		si := &signedIn{}
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), signedInKey{}, si)))
		return next(c)
	}
}

// signedInFrom is the signed-in user the store read with the request's
// session, if it read one.
func signedInFrom(ctx context.Context) (queries.SessionFindSignedInRow, bool) {
	si, ok := ctx.Value(signedInKey{}).(*signedIn)
	if !ok || !si.found {
		return queries.SessionFindSignedInRow{}, false
	}
	return si.row, true
}

// FindCtx reads a session. A signed-in browser's session comes with its
// user in one query (left in the request's signedIn); another session, or
// one saved before sessions named their user session, is read alone.
func (s sessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	q := queries.New(s.pool)
	hash := s.tokenHash(token)
	if si, ok := ctx.Value(signedInKey{}).(*signedIn); ok {
		if kept, ok := s.cache.Get(hash); ok {
			si.found, si.row = true, kept.Row
			return kept.Data, true, nil
		}
		ticket := s.cache.Ticket()
		row, err := q.SessionFindSignedIn(ctx, queries.SessionFindSignedInParams{TokenHash: hash, IdleSeconds: s.idleSeconds()})
		switch {
		case err == nil:
			si.found, si.row = true, row
			s.cache.Put(ticket, hash, sessioncache.Session{Data: row.Data, Row: row})
			return row.Data, true, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return nil, false, fmt.Errorf("find session with its user: %w", err)
		}
	}
	b, err := q.SessionFind(ctx, queries.SessionFindParams{TokenHash: hash, IdleSeconds: s.idleSeconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("find session: %w", err)
	}
	return b, true, nil
}

// CommitCtx saves nothing once the request's context has ended. scs commits
// when the handler returns and again when the first byte of the response is
// written; Echo writes an error page after its timeout middleware has
// cancelled the context. By then the session was saved, or the database
// did not answer within the deadline: there is nothing left to wait for.
func (s sessionStore) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	if ctx.Err() != nil {
		return nil
	}
	if d := s.idle(); d > 0 {
		if idle := time.Now().Add(d); idle.Before(expiry) {
			expiry = idle
		}
	}
	// The row names the user session its data names, for FindCtx's join.
	var userSession pgtype.Text
	if _, values, err := (sessionCodec{}).Decode(b); err == nil {
		userSession.String, userSession.Valid = values[sessionID].(string)
	}
	hash := s.tokenHash(token)
	err := queries.New(s.pool).SessionCommit(ctx, queries.SessionCommitParams{
		TokenHash: hash, Data: b, Expiry: pgtype.Timestamptz{Time: expiry, Valid: true},
		UserSessionID: userSession,
	})
	s.cache.ForgetToken(hash)
	if err != nil {
		return fmt.Errorf("commit session: %w", err)
	}
	return nil
}

func (s sessionStore) DeleteCtx(ctx context.Context, token string) error {
	hash := s.tokenHash(token)
	err := queries.New(s.pool).SessionDelete(ctx, hash)
	s.cache.ForgetToken(hash)
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// Find, Commit and Delete complete scs.Store, which CtxStore embeds; scs
// calls the context-taking methods above.

func (s sessionStore) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

func (s sessionStore) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

func (s sessionStore) Delete(token string) error {
	return s.DeleteCtx(context.Background(), token)
}
