package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/queries"
)

// TestSignedInPageWhileDatabaseHangs checks that the session store honours
// the request's deadline: with the database hung, a signed-in page answers
// 503 when the request times out, instead of waiting for the database.
func TestSignedInPageWhileDatabaseHangs(t *testing.T) {
	t.Parallel()
	pool, freeze, resume := handlerstest.PrivateDB(t)
	b := handlerstest.Setup(t, func(d *handlers.Deps) {
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
	c := b.Client(t)
	resp := c.Post("/login", "/login", url.Values{"email": {"hung@example.com"}, "password": {"password of hung"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	status, body := c.Get("/settings/profile")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "hung@example.com")

	freeze()
	defer resume() // before the server's clean-up waits for its requests
	// Far longer than the request timeout: the client gives up only when
	// the server does not answer at all.
	c.HTTP.Timeout = time.Minute
	got, err := c.HTTP.Get(b.Server.URL + "/settings/profile")
	require.NoError(t, err, "the page answers while the database hangs")
	got.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, got.StatusCode)
}

// TestSessionTokenStoredHashed checks that the sessions table holds a keyed
// hash of the cookie's token, never the token, and that the session works.
func TestSessionTokenStoredHashed(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "hashed")
	u, err := url.Parse(b.Server.URL)
	require.NoError(t, err)
	var token string
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if ck.Name == "kubebyon_session" {
			token = ck.Value
		}
	}
	require.NotEmpty(t, token)

	ctx := context.Background()
	var plain, hashed int
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT count(*) FROM sessions WHERE token = $1", token).Scan(&plain))
	require.Zero(t, plain, "no row holds the cookie's token")
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT count(*) FROM sessions WHERE token = $1",
		b.Box.MAC("session-token", []byte(token))).Scan(&hashed))
	require.Equal(t, 1, hashed, "the session is stored under the token's keyed hash")

	status, body := c.Get("/settings/profile")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, email, "the session still signs the browser in")
}

// TestSessionWrittenOnlyWhenChanged checks that signed-in pages leave an
// unchanged session alone (no write, no cookie), that a change is still
// saved, and that a stored session expires after the idle timeout, within
// the absolute lifetime.
func TestSessionWrittenOnlyWhenChanged(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "unwritten")
	status, _ := c.Get("/")
	require.Equal(t, http.StatusOK, status)
	version, expiry := handlerstest.SessionRow(t, b, c)
	require.WithinDuration(t, time.Now().Add(3*24*time.Hour), expiry, 2*time.Minute,
		"a session expires after three idle days, counted from its last save")

	for _, path := range []string{"/", "/clusters", "/settings/profile", "/notifications"} {
		resp, err := c.HTTP.Get(c.Base + path)
		require.NoError(t, err)
		body := handlerstest.ReadBody(t, resp)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Contains(t, body, `data-testid="sign-out"`, "%s is still signed in", path)
		require.Empty(t, resp.Header.Values("Set-Cookie"), "%s sets no cookie", path)
		v, _ := handlerstest.SessionRow(t, b, c)
		require.Equal(t, version, v, "%s leaves the session row unwritten", path)
	}

	// A change of the session's data (a flash message) is saved.
	resp := c.Post("/settings/profile", "/settings/profile", url.Values{"name": {"Renamed"}, "language": {""}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	v, _ := handlerstest.SessionRow(t, b, c)
	require.NotEqual(t, version, v, "a change is written")

	// Once the idle time has passed, the session is gone.
	_, err := b.Pool.Exec(context.Background(), "UPDATE sessions SET expiry = now() - interval '1 second'")
	require.NoError(t, err)
	status, _ = c.Get("/settings/profile")
	require.Equal(t, http.StatusSeeOther, status, "an expired session signs nobody in")
}

// TestNoSessionOutsidePages checks that probes, static files, the join
// endpoints, the webhooks and the JSON API do no session work: scs's
// middleware never runs for them (it marks every response it handles
// Vary: Cookie, and loads the session from the database), no session is
// made and no cookie set, even for a browser that holds a session.
func TestNoSessionOutsidePages(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "nosession")
	ctx := context.Background()
	count := func() (n int) {
		require.NoError(t, b.Pool.QueryRow(ctx, "SELECT count(*) FROM sessions").Scan(&n))
		return n
	}
	before := count()
	for _, path := range []string{
		"/healthz", "/readyz", "/favicon.ico", "/static/htmx.min.js", "/static/none.css",
		"/join/abcdef.0123456789abcdef", "/webhooks/node-quota/1/key", "/api/v1/clusters", "/branding/logo",
	} {
		for _, browser := range []*http.Client{c.HTTP, b.Client(t).HTTP} {
			resp, err := browser.Get(b.Server.URL + path)
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
	resp, err := b.Client(t).HTTP.Get(b.Server.URL + "/login")
	require.NoError(t, err)
	resp.Body.Close()
	require.Contains(t, resp.Header.Values("Vary"), "Cookie")
	require.NotEmpty(t, resp.Header.Values("Set-Cookie"))
	require.Equal(t, before+1, count())
}
