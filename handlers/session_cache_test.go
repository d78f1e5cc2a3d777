package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/sessioncache"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// servedKept waits until c's page at path is served from the session
// kept: its own statements alone (counted by trips), where the session's
// would come first, and returns the page. (A page that saved the session,
// or a notification that came while the session was read, leaves it
// unkept until the next page.)
func servedKept(t *testing.T, trips *testenv.RoundTrips, c *handlerstest.Client, path string, statements int) string {
	t.Helper()
	var body string
	require.Eventually(t, func() bool {
		trips.Reset()
		var code int
		code, body = c.Get(path)
		return code == http.StatusOK && len(trips.Statements()) == statements
	}, 10*time.Second, 10*time.Millisecond, "%s is served with the session kept", path)
	return body
}

// keptBy waits until c's cluster list (its one statement) is served from
// the session kept (servedKept).
func keptBy(trips *testenv.RoundTrips) func(t *testing.T, c *handlerstest.Client) {
	return func(t *testing.T, c *handlerstest.Client) {
		t.Helper()
		servedKept(t, trips, c, "/clusters", 1)
	}
}

// TestSessionCacheOwnChange: a change the browser makes is on its next
// page at once, not when the database's notification comes: here none
// ever comes (the cache listens on a channel nothing notifies), so that
// a change made elsewhere stays unseen while the session is kept.
func TestSessionCacheOwnChange(t *testing.T) {
	t.Parallel()
	trips := &testenv.RoundTrips{}
	b := handlerstest.SetupTraced(t, trips, handlerstest.WithSessionCache(t, time.Hour, "kubebyon_session_unheard"))
	kept := keptBy(trips)
	c, email := b.SignedUpUser(t, "cache-own")
	kept(t, c)
	const unread = `data-testid="unread-count">1</mark>`
	_, err := b.Pool.Exec(context.Background(), `INSERT INTO notifications (user_id, kind, title) VALUES ($1, 'cluster_ready', 'Ready')`, b.UserID(t, email))
	require.NoError(t, err)
	code, body := c.Get("/clusters")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, unread, "unheard, a change made elsewhere is not seen while the session is kept")

	// A change that saves the session (its flash).
	resp := c.Post("/settings/profile", "/settings/profile", url.Values{"name": {"Renamed By Form"}, "language": {"en"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	code, body = c.Get("/clusters")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Renamed By Form")
	require.Contains(t, body, unread, "the session was read again")

	// One that does not.
	kept(t, c)
	resp = c.Post("/notifications", "/notifications/read", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	code, body = c.Get("/clusters")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, unread)
}

// TestSessionCache: with the session cache (serve's), a signed-in page
// reads its session from memory, and a change to what the session query
// reads is on the next page: at once when the browser made it, as soon
// as the database notifies when another request, a job or another
// replica did. The cache keeps a session an hour here, so that only the
// notification can make a page see the change.
func TestSessionCache(t *testing.T) {
	t.Parallel()
	trips := &testenv.RoundTrips{}
	b := handlerstest.SetupTraced(t, trips, handlerstest.WithSessionCache(t, time.Hour, sessioncache.Channel))
	ctx := context.Background()

	kept := keptBy(trips)
	// soon is how long a notification may take to come back.
	const soon = 10 * time.Second
	shows := func(c *handlerstest.Client, path, text string) func() bool {
		return func() bool {
			code, body := c.Get(path)
			return code == http.StatusOK && strings.Contains(body, text)
		}
	}
	signedOut := func(c *handlerstest.Client) func() bool {
		return func() bool {
			code, _ := c.Get("/clusters")
			return code == http.StatusSeeOther
		}
	}

	// Changes made elsewhere, as another replica or a job writes them.
	for _, tc := range []struct {
		name   string
		change string // SQL, with the user's id as $1
		seen   func(c *handlerstest.Client) func() bool
	}{
		{"renamed", `UPDATE users SET name = 'Renamed Elsewhere' WHERE id = $1`,
			func(c *handlerstest.Client) func() bool { return shows(c, "/clusters", "Renamed Elsewhere") }},
		{"notified", `INSERT INTO notifications (user_id, kind, title) VALUES ($1, 'cluster_ready', 'Ready')`,
			func(c *handlerstest.Client) func() bool {
				return shows(c, "/clusters", `data-testid="unread-count">1</mark>`)
			}},
		{"signed out everywhere", `UPDATE user_sessions SET ended_at = now() WHERE user_id = $1`, signedOut},
		{"session deleted", `DELETE FROM sessions WHERE user_session_id IN (SELECT id FROM user_sessions WHERE user_id = $1)`, signedOut},
		{"disabled", `UPDATE users SET disabled_at = now() WHERE id = $1`, signedOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, email := b.SignedUpUser(t, "cache-"+strings.ReplaceAll(tc.name, " ", "-"))
			kept(t, c)
			_, err := b.Pool.Exec(ctx, tc.change, b.UserID(t, email))
			require.NoError(t, err)
			require.Eventually(t, tc.seen(c), soon, 10*time.Millisecond)
		})
	}

	t.Run("an admin's change to another user", func(t *testing.T) {
		admin, _ := b.SignedUpAdmin(t, "cache-admin")
		require.Eventually(t, shows(admin, "/admin/users", "cache-admin"), soon, 10*time.Millisecond, "the admin's new role is on their pages")
		victim, email := b.SignedUpUser(t, "cache-victim")
		kept(t, victim)
		page := fmt.Sprintf("/admin/users/%d", b.UserID(t, email))
		resp := admin.Post(page, page+"/disable", url.Values{"password": {"password of cache-admin"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
		require.Eventually(t, signedOut(victim), soon, 10*time.Millisecond)
	})

	t.Run("two-factor authentication required of everyone", func(t *testing.T) {
		c, _ := b.SignedUpUser(t, "cache-two-factor")
		kept(t, c)
		_, err := b.Pool.Exec(ctx, `INSERT INTO settings (key, value) VALUES ('two_factor', '{"require": "all"}')
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`)
		require.NoError(t, err)
		t.Cleanup(func() { _, _ = b.Pool.Exec(ctx, `DELETE FROM settings WHERE key = 'two_factor'`) })
		require.Eventually(t, func() bool {
			code, _ := c.Get("/clusters")
			return code == http.StatusSeeOther
		}, soon, 10*time.Millisecond, "the page sends them to set it up")
	})
}
