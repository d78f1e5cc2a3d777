package sessioncache_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/sessioncache"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// eventually bounds a notification's trip through the database.
const eventually = 10 * time.Second

// TestTriggersNotify: each change to what the session query reads
// notifies kubebyon_session with what to forget (migration 067), and
// nothing else does.
func TestTriggersNotify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	var uid int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO users (email, name, email_verified_at) VALUES ('cached@example.com', 'Cached', now()) RETURNING id`).Scan(&uid))
	_, err := pool.Exec(ctx, `INSERT INTO user_sessions (id, user_id) VALUES ('us-1', $1)`, uid)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO sessions (token, data, expiry, user_session_id) VALUES ('token-hash', '{}', now() + interval '1 hour', 'us-1')`)
	require.NoError(t, err)

	conn := listen(t, pool)
	user := "u:" + strconv.FormatInt(uid, 10)
	for _, tc := range []struct {
		name   string
		change []string // SQL, each with the user's id as $1, in one transaction
		want   []string
	}{
		{"a session saved", []string{`UPDATE sessions SET data = '{"v":{}}' WHERE token = 'token-hash' AND $1::bigint > 0`}, []string{"t:token-hash"}},
		{"a user changed", []string{`UPDATE users SET name = 'Renamed' WHERE id = $1`}, []string{user}},
		{"a user session touched", []string{`UPDATE user_sessions SET last_seen_at = now() WHERE user_id = $1`}, []string{user}},
		{"an organization chosen", []string{`UPDATE user_sessions SET org_id = (SELECT id FROM organizations WHERE personal_of = $1)`}, []string{user}},
		{"a notification", []string{`INSERT INTO notifications (user_id, kind, title) VALUES ($1, 'cluster_ready', 'Ready')`}, []string{user}},
		{"notifications read", []string{`UPDATE notifications SET read_at = now() WHERE user_id = $1`}, []string{user}},
		{"notifications deleted", []string{`DELETE FROM notifications WHERE user_id = $1`}, []string{user}},
		{"two-factor set up", []string{`INSERT INTO user_totp (user_id, secret_sealed, enabled_at) VALUES ($1, 'sealed', now())`}, []string{user}},
		{"two-factor removed", []string{`DELETE FROM user_totp WHERE user_id = $1`}, []string{user}},
		{"a role in an organization", []string{`UPDATE organization_members SET role = 'owner' WHERE user_id = $1`}, []string{user}},
		{"an organization renamed", []string{`UPDATE organizations SET name = 'Renamed org' WHERE personal_of = $1`}, []string{"*"}},
		{"two-factor required", []string{`INSERT INTO settings (key, value) SELECT 'two_factor', '{"require": "all"}' WHERE $1::bigint > 0`}, []string{"*"}},
		{"two-factor setting removed", []string{`DELETE FROM settings WHERE key = 'two_factor' AND $1::bigint > 0`}, []string{"*"}},
		{"another setting", []string{`INSERT INTO settings (key, value) SELECT 'something_else', '{}' WHERE $1::bigint > 0`}, nil},
		{"a session that names no user", []string{`INSERT INTO sessions (token, data, expiry) SELECT 'visitor', '{}', now() + interval '1 hour' WHERE $1::bigint > 0`}, nil},
		{"many changes of one user, in one transaction", []string{`UPDATE users SET name = name || '!' WHERE id = $1`, `UPDATE user_sessions SET ended_at = now() WHERE user_id = $1`}, []string{user}},
		{"a session expired", []string{`UPDATE sessions SET expiry = now() - interval '1 second' WHERE token = 'visitor' AND $1::bigint > 0`}, []string{"t:visitor"}},
		{"an expired session deleted (the cleanup job)", []string{`DELETE FROM sessions WHERE expiry < now() AND $1::bigint > 0`}, nil},
		{"a session deleted", []string{`DELETE FROM sessions WHERE token = 'token-hash' AND $1::bigint > 0`}, []string{"t:token-hash"}},
	} {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for _, sql := range tc.change {
				if _, err := tx.Exec(ctx, sql, uid); err != nil {
					return err
				}
			}
			return nil
		})
		require.NoError(t, err, tc.name)
		// The end marker comes after the change's notifications, if any.
		_, err = pool.Exec(ctx, `SELECT pg_notify('kubebyon_session', 'end')`)
		require.NoError(t, err)
		require.Equal(t, tc.want, received(t, conn), tc.name)
	}
}

// listen is a connection listening on the cache's channel.
func listen(t *testing.T, pool *pgxpool.Pool) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	_, err = conn.Exec(ctx, "LISTEN kubebyon_session")
	require.NoError(t, err)
	return conn
}

// received is the payloads before the end marker.
func received(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	defer cancel()
	var got []string
	for {
		n, err := conn.WaitForNotification(ctx)
		require.NoError(t, err)
		if n.Payload == "end" {
			return got
		}
		got = append(got, n.Payload)
	}
}

// session is a session of the user id.
func session(id int64, data string) sessioncache.Session {
	return sessioncache.Session{Data: []byte(data), Row: queries.SessionFindSignedInRow{User: queries.User{ID: id}}}
}

// running is a cache of pool's sessions, listening until the test ends.
func running(t *testing.T, pool *pgxpool.Pool) *sessioncache.Cache {
	t.Helper()
	c := sessioncache.New(pool, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, c.Listening, eventually, 10*time.Millisecond)
	return c
}

// TestCacheKeepsAndForgets: a session read is kept until it is forgotten,
// by its token, its user or everyone; a read that a forgetting overtook
// is not kept; a cache that does not listen keeps nothing.
func TestCacheKeepsAndForgets(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	c := running(t, pool)

	kept := func(token string) bool {
		_, ok := c.Get(token)
		return ok
	}
	c.Put(c.Ticket(), "a", session(1, "first"))
	c.Put(c.Ticket(), "b", session(1, "second"))
	c.Put(c.Ticket(), "c", session(2, "other"))
	got, ok := c.Get("a")
	require.True(t, ok)
	require.Equal(t, "first", string(got.Data))
	require.Equal(t, int64(1), got.Row.User.ID)

	c.ForgetToken("a")
	require.False(t, kept("a"))
	require.True(t, kept("b"))

	c.ForgetUser(1)
	require.False(t, kept("b"))
	require.True(t, kept("c"), "another user's session stays")
	c.Put(c.Ticket(), "b", session(1, "read again"))
	require.True(t, kept("b"), "read after the change, it is kept")

	// Read before a change that was told before the answer came: the
	// answer may predate the change.
	ticket := c.Ticket()
	c.ForgetUser(3)
	c.Put(ticket, "d", session(4, "overtaken"))
	require.False(t, kept("d"))

	c.ForgetAll()
	require.False(t, kept("b"))
	require.False(t, kept("c"))

	// Not listening: nothing kept. A nil cache keeps nothing either.
	idle := sessioncache.New(pool, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Hour)
	idle.Put(idle.Ticket(), "a", session(1, "first"))
	_, ok = idle.Get("a")
	require.False(t, ok)
	var none *sessioncache.Cache
	none.Put(none.Ticket(), "a", session(1, "first"))
	_, ok = none.Get("a")
	require.False(t, ok)
	none.ForgetToken("a")
	none.ForgetUser(1)
}

// TestCacheForgetsWhatTheDatabaseTells: the notifications forget what
// they name; one that cannot be read forgets everything.
func TestCacheForgetsWhatTheDatabaseTells(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	c := running(t, pool)
	for _, tc := range []struct {
		payload string
		forgets []string
		keeps   []string
	}{
		{"t:a", []string{"a"}, []string{"b", "c"}},
		{"u:1", []string{"a", "b"}, []string{"c"}},
		{"*", []string{"a", "b", "c"}, nil},
		{"u:not-a-number", []string{"a", "b", "c"}, nil},
	} {
		c.ForgetAll()
		c.Put(c.Ticket(), "a", session(1, "a"))
		c.Put(c.Ticket(), "b", session(1, "b"))
		c.Put(c.Ticket(), "c", session(2, "c"))
		_, err := pool.Exec(ctx, `SELECT pg_notify('kubebyon_session', $1)`, tc.payload)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			for _, token := range tc.forgets {
				if _, ok := c.Get(token); ok {
					return false
				}
			}
			return true
		}, eventually, 10*time.Millisecond, tc.payload)
		for _, token := range tc.keeps {
			_, ok := c.Get(token)
			require.True(t, ok, "%s keeps %s", tc.payload, token)
		}
	}
}
