package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/pgserver"
	"github.com/kubebyon/kubebyon/migrations"
	"github.com/kubebyon/kubebyon/queries"
)

// privateDB starts a migrated PostgreSQL server of the test's own (the
// shared one must keep answering the other tests), and returns a pool on it
// and a function that stops every process of the server (SIGSTOP), so that
// it hangs as a stuck machine would. The returned resume undoes it; it also
// runs when the test ends.
func privateDB(t *testing.T) (pool *pgxpool.Pool, freeze func(), resume func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Under the system temp dir itself, as testenv does: the server may run
	// as another user, who cannot enter t.TempDir()'s parent.
	dir, err := os.MkdirTemp("", "kubebyon-hang-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	srv, err := pgserver.Start(ctx, pgserver.Options{
		Dir: dir, Database: "kubebyon",
		Settings: map[string]string{"fsync": "off", "synchronous_commit": "off"},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	pool, err = database.Connect(ctx, srv.URL())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = migrations.Up(ctx, pool)
	require.NoError(t, err)

	pidFile, err := os.ReadFile(filepath.Join(dir, "pgdata", "postmaster.pid"))
	require.NoError(t, err)
	postmaster, err := strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
	require.NoError(t, err)
	var stopped []int
	freeze = func() {
		// The backends of open connections too: each one is a child of the
		// postmaster in a process group of its own.
		stopped = append(childrenOf(t, postmaster), postmaster)
		for _, pid := range stopped {
			require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
		}
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			for _, pid := range stopped {
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
		})
	}
	t.Cleanup(resume)
	return pool, freeze, resume
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone since
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, child)
		}
	}
	require.NotEmpty(t, kids, "PostgreSQL runs no children")
	return kids
}

// TestSignedInPageWhileDatabaseHangs checks that the session store honours
// the request's deadline: with the database hung, a signed-in page answers
// 503 when the request times out, instead of waiting for the database.
func TestSignedInPageWhileDatabaseHangs(t *testing.T) {
	t.Parallel()
	pool, freeze, resume := privateDB(t)
	b := setup(t, func(d *handlers.Deps) {
		d.Pool = pool
		d.Accounts = &accounts.Service{Pool: pool, River: d.River, Box: d.Box}
		// Room for a password check on a busy machine.
		d.RequestTimeout = 10 * time.Second
	})
	hash, err := passwords.Hash("password of hung")
	require.NoError(t, err)
	_, err = queries.New(pool).UserCreate(context.Background(), queries.UserCreateParams{
		Email: "hung@example.com", Name: "Hung", Role: "user",
		PasswordHash:    pgtype.Text{String: hash, Valid: true},
		EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
	})
	require.NoError(t, err)
	c := b.client(t)
	resp := c.post("/login", "/login", url.Values{"email": {"hung@example.com"}, "password": {"password of hung"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	status, body := c.get("/settings/profile")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "hung@example.com")

	freeze()
	defer resume() // before the server's clean-up waits for its requests
	// Far longer than the request timeout: the client gives up only when
	// the server does not answer at all.
	c.http.Timeout = time.Minute
	got, err := c.http.Get(b.server.URL + "/settings/profile")
	require.NoError(t, err, "the page answers while the database hangs")
	got.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, got.StatusCode)
}

// TestSessionTokenStoredHashed checks that the sessions table holds a keyed
// hash of the cookie's token, never the token, and that the session works.
func TestSessionTokenStoredHashed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, email := b.signedUpUser(t, "hashed")
	u, err := url.Parse(b.server.URL)
	require.NoError(t, err)
	var token string
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == "kubebyon_session" {
			token = ck.Value
		}
	}
	require.NotEmpty(t, token)

	ctx := context.Background()
	var plain, hashed int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM sessions WHERE token = $1", token).Scan(&plain))
	require.Zero(t, plain, "no row holds the cookie's token")
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM sessions WHERE token = $1",
		b.box.MAC("session-token", []byte(token))).Scan(&hashed))
	require.Equal(t, 1, hashed, "the session is stored under the token's keyed hash")

	status, body := c.get("/settings/profile")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, email, "the session still signs the browser in")
}

// sessionRow is the stored row of the browser's session: its version
// (xmin changes with every write) and expiry.
func sessionRow(t *testing.T, b *testBundle, c *client) (version string, expiry time.Time) {
	t.Helper()
	u, err := url.Parse(b.server.URL)
	require.NoError(t, err)
	var token string
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == "kubebyon_session" {
			token = ck.Value
		}
	}
	require.NotEmpty(t, token)
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT xmin::text, expiry FROM sessions WHERE token = $1",
		b.box.MAC("session-token", []byte(token))).Scan(&version, &expiry))
	return version, expiry
}

// TestSessionWrittenOnlyWhenChanged checks that signed-in pages leave an
// unchanged session alone (no write, no cookie), that a change is still
// saved, and that a stored session expires after the idle timeout, within
// the absolute lifetime.
func TestSessionWrittenOnlyWhenChanged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, _ := b.signedUpUser(t, "unwritten")
	status, _ := c.get("/")
	require.Equal(t, http.StatusOK, status)
	version, expiry := sessionRow(t, b, c)
	require.WithinDuration(t, time.Now().Add(3*24*time.Hour), expiry, 2*time.Minute,
		"a session expires after three idle days, counted from its last save")

	for _, path := range []string{"/", "/clusters", "/settings/profile", "/notifications"} {
		resp, err := c.http.Get(c.base + path)
		require.NoError(t, err)
		body := readBody(t, resp)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Contains(t, body, `data-testid="sign-out"`, "%s is still signed in", path)
		require.Empty(t, resp.Header.Values("Set-Cookie"), "%s sets no cookie", path)
		v, _ := sessionRow(t, b, c)
		require.Equal(t, version, v, "%s leaves the session row unwritten", path)
	}

	// A change of the session's data (a flash message) is saved.
	resp := c.post("/settings/profile", "/settings/profile", url.Values{"name": {"Renamed"}, "language": {""}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	v, _ := sessionRow(t, b, c)
	require.NotEqual(t, version, v, "a change is written")

	// Once the idle time has passed, the session is gone.
	_, err := b.pool.Exec(context.Background(), "UPDATE sessions SET expiry = now() - interval '1 second'")
	require.NoError(t, err)
	status, _ = c.get("/settings/profile")
	require.Equal(t, http.StatusSeeOther, status, "an expired session signs nobody in")
}

// TestNoSessionOutsidePages checks that probes, static files, the join
// endpoints, the webhooks and the JSON API do no session work: scs's
// middleware never runs for them (it marks every response it handles
// Vary: Cookie, and loads the session from the database), no session is
// made and no cookie set, even for a browser that holds a session.
func TestNoSessionOutsidePages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, _ := b.signedUpUser(t, "nosession")
	ctx := context.Background()
	count := func() (n int) {
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM sessions").Scan(&n))
		return n
	}
	before := count()
	for _, path := range []string{
		"/healthz", "/readyz", "/favicon.ico", "/static/htmx.min.js", "/static/none.css",
		"/join/abcdef.0123456789abcdef", "/webhooks/node-quota/1/key", "/api/v1/clusters", "/branding/logo",
	} {
		for _, browser := range []*http.Client{c.http, b.client(t).http} {
			resp, err := browser.Get(b.server.URL + path)
			require.NoError(t, err)
			resp.Body.Close()
			require.Empty(t, resp.Header.Values("Set-Cookie"), path)
			for _, v := range resp.Header.Values("Vary") {
				require.NotContains(t, v, "Cookie", "%s went through the session middleware", path)
			}
		}
	}
	require.Equal(t, before, count(), "no session was made")

	// A page does: what the checks above would see if it ran.
	resp, err := b.client(t).http.Get(b.server.URL + "/login")
	require.NoError(t, err)
	resp.Body.Close()
	require.Contains(t, resp.Header.Values("Vary"), "Cookie")
	require.NotEmpty(t, resp.Header.Values("Set-Cookie"))
	require.Equal(t, before+1, count())
}
