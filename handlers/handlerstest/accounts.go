package handlerstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/pgserver"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/migrations"
	"github.com/kubebyon/kubebyon/queries"
)

// UniqueEmail makes a recipient no other test uses (mailpit is shared).
func UniqueEmail(name string) string {
	return name + "-" + strings.ToLower(rand.Text()[:12]) + "@example.com"
}

// SignUp submits the sign-up form as c and expects the redirect to the
// verification page.
func SignUp(t *testing.T, c *Client, email, name, password string) {
	t.Helper()
	resp := c.Post("/signup", "/signup", url.Values{"email": {email}, "name": {name}, "password": {password}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, ReadBody(t, resp))
	require.Equal(t, "/signup/verify?email="+url.QueryEscape(email), resp.Header.Get("Location"))
}

// SignedUpUser registers and verifies an account and returns its client,
// signed in.
func (b *Bundle) SignedUpUser(t *testing.T, name string) (*Client, string) {
	t.Helper()
	c := b.Client(t)
	email := UniqueEmail(name)
	SignUp(t, c, email, name, "password of "+name)
	code := CodeFrom(t, b.WaitMessages(t, email, 1)[0])
	resp := c.Post("/signup/verify?email="+url.QueryEscape(email), "/signup/verify", url.Values{"email": {email}, "code": {code}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, ReadBody(t, resp))
	return c, email
}

// RoundTrip sends r with the browser's Accept-Language.
func (a AcceptLanguage) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept-Language", a.Lang)
	return a.Next.RoundTrip(r)
}

// SolidPNG is a w x h PNG of one colour.
func SolidPNG(t *testing.T, w, h int, c color.Color) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// NotificationsPage is the notification preferences page.
const NotificationsPage = "/settings/notifications"

// Checkbox finds a preference's checkbox on the page and whether it is
// checked.
func Checkbox(t *testing.T, page string, k notify.Kind, c notify.Channel) bool {
	t.Helper()
	field := "pref." + string(k) + "." + string(c)
	i := strings.Index(page, `name="`+field+`"`)
	require.GreaterOrEqual(t, i, 0, "no checkbox %s", field)
	end := strings.Index(page[i:], ">")
	return strings.Contains(page[i:i+end], " checked")
}

// Notice is a notification as its reader reads it.
type Notice struct {
	title  string
	Body   string
	unread bool
}

// Notices are the user's notifications of kind, oldest first, as a reader
// of English reads them.
func (b *Bundle) Notices(t *testing.T, email string, kind notify.Kind) []Notice {
	t.Helper()
	catalog, err := locale.New()
	require.NoError(t, err)
	rows, err := queries.New(b.Pool).NotificationListByUser(context.Background(), queries.NotificationListByUserParams{UserID: b.UserID(t, email), RowLimit: 1000})
	require.NoError(t, err)
	var out []Notice
	for _, n := range slices.Backward(rows) {
		if n.Kind == string(kind) {
			title, body := notify.Word(catalog.For("en"), n)
			out = append(out, Notice{title: title, Body: body, unread: !n.ReadAt.Valid})
		}
	}
	return out
}

// UserID returns the id of the account with an email.
func (b *Bundle) UserID(t *testing.T, email string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT id FROM users WHERE lower(email) = lower($1)", email).Scan(&id))
	return id
}

// Audits returns the actions of a user's audit events, oldest first.
func (b *Bundle) Audits(t *testing.T, userID int64) []string {
	t.Helper()
	rows, err := b.Pool.Query(context.Background(), "SELECT action FROM audit_events WHERE actor_id = $1 ORDER BY id", userID)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var a string
		require.NoError(t, rows.Scan(&a))
		out = append(out, a)
	}
	require.NoError(t, rows.Err())
	return out
}

// WithSubject returns the message with a subject; mail workers run in
// parallel, so messages may arrive in another order than they were sent.
func WithSubject(t *testing.T, msgs []testenv.Message, subject string) testenv.Message {
	t.Helper()
	for _, m := range msgs {
		if m.Subject == subject {
			return m
		}
	}
	require.Failf(t, "no such message", "%q not among %d messages", subject, len(msgs))
	return testenv.Message{}
}

// SignIn signs in a new client with a password.
func (b *Bundle) SignIn(t *testing.T, email, password string) *Client {
	t.Helper()
	c := b.Client(t)
	resp := c.Post("/login", "/login", url.Values{"email": {email}, "password": {password}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, ReadBody(t, resp))
	return c
}

// ProfilePage is the profile settings page.
const ProfilePage = "/settings/profile"

// PrivateDB starts a migrated PostgreSQL server of the test's own (the
// shared one must keep answering the other tests), and returns a pool on it
// and a function that stops every process of the server (SIGSTOP), so that
// it hangs as a stuck machine would. The returned resume undoes it; it also
// runs when the test ends.
func PrivateDB(t *testing.T) (pool *pgxpool.Pool, freeze func(), resume func()) {
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

// SessionRow is the stored row of the browser's session: its version
// (xmin changes with every write) and expiry.
func SessionRow(t *testing.T, b *Bundle, c *Client) (version string, expiry time.Time) {
	t.Helper()
	u, err := url.Parse(b.Server.URL)
	require.NoError(t, err)
	var token string
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if ck.Name == "kubebyon_session" {
			token = ck.Value
		}
	}
	require.NotEmpty(t, token)
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT xmin::text, expiry FROM sessions WHERE token = $1",
		b.Box.MAC("session-token", []byte(token))).Scan(&version, &expiry))
	return version, expiry
}
