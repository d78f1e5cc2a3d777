package handlers_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

var eventIDs = regexp.MustCompile(`data-testid="activity-row" data-event-id="(\d+)"`)

func eventIDsIn(t *testing.T, body string) []int64 {
	t.Helper()
	var ids []int64
	for _, m := range eventIDs.FindAllStringSubmatch(body, -1) {
		id, err := strconv.ParseInt(m[1], 10, 64)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

func TestAdminAreaIsHiddenFromOthers(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	user, userEmail := b.SignedUpUser(t, "plain")
	id := b.UserID(t, userEmail)
	visitor := b.Client(t)

	_, body := user.Get("/")
	require.NotContains(t, body, `data-testid="nav-admin"`)

	gets := []string{
		"/admin", "/admin/users", "/admin/users?q=plain", fmt.Sprintf("/admin/users/%d", id),
		"/admin/users/999999", "/admin/activity", "/admin/activity?actor=plain", "/admin/settings", "/admin/settings/sign-in", "/admin/settings/branding", "/admin/nothing-here",
	}
	var posts []string
	for _, action := range []string{"disable", "enable", "promote", "demote"} {
		posts = append(posts, fmt.Sprintf("/admin/users/%d/%s", id, action))
	}
	posts = append(posts, "/admin/settings", "/admin/settings/test", "/admin/settings/sign-in", "/admin/settings/branding", "/admin/settings/sign-in/test", "/admin/edge/ingress")
	for _, who := range []struct {
		name     string
		c        *handlerstest.Client
		formPage string // a page with a CSRF token, so that the POST is not refused for its lack
	}{{"visitor", visitor, "/login"}, {"user", user, "/"}} {
		for _, path := range gets {
			t.Run(who.name+" GET "+path, func(t *testing.T) {
				code, body := who.c.Get(path)
				require.Equal(t, http.StatusNotFound, code)
				require.Contains(t, body, "Page not found")
				resp, _ := who.c.HTMX(path)
				require.Equal(t, http.StatusNotFound, resp.StatusCode)
			})
		}
		for _, path := range posts {
			t.Run(who.name+" POST "+path, func(t *testing.T) {
				resp := who.c.Post(who.formPage, path, url.Values{"password": {"password of plain"}, "chartVersion": {"0.0.1"}})
				require.Equal(t, http.StatusNotFound, resp.StatusCode)
			})
		}
	}
	var role string
	var disabled bool
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		"SELECT role, disabled_at IS NOT NULL FROM users WHERE id = $1", id).Scan(&role, &disabled))
	require.Equal(t, "user", role)
	require.False(t, disabled)
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_events WHERE action LIKE 'admin.%'").Scan(&n))
	require.Zero(t, n)
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM settings").Scan(&n))
	require.Zero(t, n, "no settings were written")
}

func TestAdminUserListSearchAndPages(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, adminEmail := b.SignedUpAdmin(t, "lister")
	ctx := context.Background()
	_, err := b.Pool.Exec(ctx, `INSERT INTO users (email, name)
		SELECT 'member' || g || '@bulk.example', 'Member ' || g FROM generate_series(1, 60) g`)
	require.NoError(t, err)
	_, err = b.Pool.Exec(ctx, `INSERT INTO users (email, name, email_verified_at, disabled_at)
		VALUES ('gh@navy.example', 'Grace Hopper', now(), now())`)
	require.NoError(t, err)

	code, body := admin.Get("/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="nav-admin"`)

	// The first page of everyone: 25 of 62, the admin first.
	code, body = admin.Get("/admin/users")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-nav-users"`)
	require.Contains(t, body, `data-testid="admin-user-search"`)
	require.Equal(t, 25, strings.Count(body, `data-testid="admin-user-row"`))
	require.Contains(t, body, adminEmail)
	require.Contains(t, body, `data-status="active"`)
	require.Contains(t, body, `data-status="unverified"`)
	require.Contains(t, body, "Never", "members never signed in")
	require.Equal(t, "/admin/users?after="+strconv.FormatInt(b.UserID(t, "member24@bulk.example"), 10), handlerstest.LinkOf(t, body, "admin-users-next"))

	// Paging through the 60 members, without JavaScript.
	next := "/admin/users?q=" + url.QueryEscape("@BULK.")
	var sizes []int
	seen := map[string]bool{}
	for next != "" {
		code, body = admin.Get(next)
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `value="@BULK."`, "the search box keeps the search")
		require.Equal(t, len(sizes) > 0, strings.Contains(body, `data-testid="admin-users-first"`), "a link back to the first page, from the others")
		sizes = append(sizes, strings.Count(body, `data-testid="admin-user-row"`))
		for _, m := range regexp.MustCompile(`member\d+@bulk\.example`).FindAllString(body, -1) {
			seen[m] = true
		}
		next = ""
		if strings.Contains(body, `data-testid="admin-users-next"`) {
			next = handlerstest.LinkOf(t, body, "admin-users-next")
			require.Contains(t, next, "q=%40BULK.", "the next page keeps the search")
		}
	}
	require.Equal(t, []int{25, 25, 10}, sizes)
	require.Len(t, seen, 60)

	// Searching by name, any case; the plain form answers with the page.
	code, body = admin.Get("/admin/users?q=hopper")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "<!doctype html>")
	require.Equal(t, 1, strings.Count(body, `data-testid="admin-user-row"`))
	require.Contains(t, body, "gh@navy.example")
	require.Contains(t, body, `data-status="disabled"`)
	require.NotContains(t, body, `data-testid="admin-users-next"`)

	// htmx gets only the results.
	resp, body := admin.HTMX("/admin/users?q=GRACE")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Values("Vary"), "HX-Request")
	require.True(t, strings.HasPrefix(body, `<div id="admin-users-results"`), body)
	require.NotContains(t, body, "<html")
	require.NotContains(t, body, `data-testid="admin-user-search"`)
	require.Equal(t, 1, strings.Count(body, `data-testid="admin-user-row"`))
	require.Contains(t, body, "gh@navy.example")

	_, body = admin.HTMX("/admin/users?q=nobody-at-all")
	require.Contains(t, body, "No users match.")
	require.Zero(t, strings.Count(body, `data-testid="admin-user-row"`))
}

func TestAdminUserActions(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, adminEmail := b.SignedUpAdmin(t, "boss")
	adminID := b.UserID(t, adminEmail)
	victim, victimEmail := b.SignedUpUser(t, "victim")
	victimID := b.UserID(t, victimEmail)
	page := fmt.Sprintf("/admin/users/%d", victimID)
	const adminPassword = "password of boss"
	state := func() (role string, disabled bool) {
		t.Helper()
		require.NoError(t, b.Pool.QueryRow(ctx, "SELECT role, disabled_at IS NOT NULL FROM users WHERE id = $1", victimID).Scan(&role, &disabled))
		return role, disabled
	}
	signedIn := func(c *handlerstest.Client) bool {
		t.Helper()
		code, body := c.Get("/")
		require.Equal(t, http.StatusOK, code)
		return strings.Contains(body, `data-testid="dashboard-greeting"`)
	}

	code, body := admin.Get(page)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-user-email">`+victimEmail)
	require.Contains(t, body, `data-status="active"`)
	require.Equal(t, 1, strings.Count(body, `data-testid="admin-session-row"`))
	require.Contains(t, body, "127.0.0.1")
	require.Contains(t, body, "Go-http-client")
	require.Contains(t, body, "user.sign_in")
	require.Contains(t, body, "user.verify_email")
	require.Regexp(t, `data-testid="admin-user-last-sign-in">\s*<time datetime=`, body)
	require.Contains(t, body, `data-testid="admin-form-disable"`)
	require.Contains(t, body, `data-testid="admin-form-promote"`)

	t.Run("wrong password changes nothing", func(t *testing.T) {
		resp := admin.Post(page, page+"/disable", url.Values{"password": {"not the password"}})
		body := handlerstest.ReadBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, body, `data-testid="error-password-disable">That is not your password. Nothing was changed.`)
		role, disabled := state()
		require.Equal(t, "user", role)
		require.False(t, disabled)
		require.True(t, signedIn(victim))
	})

	t.Run("disable ends sessions and sign-in", func(t *testing.T) {
		resp := admin.Post(page, page+"/disable", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
		require.Equal(t, page, resp.Header.Get("Location"))
		_, body := admin.Get(page)
		require.Contains(t, body, "The account is disabled and signed out everywhere.")
		require.Contains(t, body, `data-status="disabled"`)
		require.Contains(t, body, `data-testid="admin-form-enable"`)
		require.NotContains(t, body, `data-testid="admin-form-disable"`)
		require.Zero(t, strings.Count(body, `data-testid="admin-session-row"`))
		_, disabled := state()
		require.True(t, disabled)

		require.False(t, signedIn(victim), "the open session ended")
		resp = victim.Post("/login", "/login", url.Values{"email": {victimEmail}, "password": {"password of victim"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), "This account is disabled.")
	})

	t.Run("disable again is no change", func(t *testing.T) {
		resp := admin.Post(page, page+"/disable", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), "Nothing changed: the account was already like that.")
	})

	t.Run("enable", func(t *testing.T) {
		resp := admin.Post(page, page+"/enable", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
		_, disabled := state()
		require.False(t, disabled)
		require.False(t, signedIn(victim), "enabling does not revive old sessions")
		resp = victim.Post("/login", "/login", url.Values{"email": {victimEmail}, "password": {"password of victim"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.True(t, signedIn(victim))
	})

	t.Run("promote and demote", func(t *testing.T) {
		code, _ := victim.Get("/admin/users")
		require.Equal(t, http.StatusNotFound, code)

		resp := admin.Post(page, page+"/promote", url.Values{"password": {"wrong"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-password-promote"`)
		role, _ := state()
		require.Equal(t, "user", role)

		resp = admin.Post(page, page+"/promote", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
		_, body := admin.Get(page)
		require.Contains(t, body, "The account is now an admin.")
		require.Contains(t, body, `data-testid="admin-form-demote"`)
		code, _ = victim.Get("/admin/users")
		require.Equal(t, http.StatusOK, code)

		resp = admin.Post(page, page+"/demote", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
		role, _ = state()
		require.Equal(t, "user", role)
		code, _ = victim.Get("/admin/users")
		require.Equal(t, http.StatusNotFound, code)
	})

	t.Run("not on oneself", func(t *testing.T) {
		self := fmt.Sprintf("/admin/users/%d", adminID)
		_, body := admin.Get(self)
		require.Contains(t, body, `data-testid="admin-self-note"`)
		require.NotContains(t, body, `data-testid="admin-form-disable"`)
		require.NotContains(t, body, `data-testid="admin-form-demote"`)

		resp := admin.Post(self, self+"/disable", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), "You cannot disable your own account.")
		resp = admin.Post(self, self+"/demote", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), "You cannot remove your own admin role.")
		code, _ := admin.Get("/admin/users")
		require.Equal(t, http.StatusOK, code, "still an admin, still signed in")
	})

	t.Run("unknown account", func(t *testing.T) {
		code, _ := admin.Get("/admin/users/999999")
		require.Equal(t, http.StatusNotFound, code)
		resp := admin.Post(page, "/admin/users/999999/disable", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	rows, err := b.Pool.Query(ctx, `SELECT action, count(*) FROM audit_events
		WHERE actor_id = $1 AND target_type = 'user' AND target_id = $2 AND action LIKE 'admin.%'
		GROUP BY action`, adminID, strconv.FormatInt(victimID, 10))
	require.NoError(t, err)
	got := map[string]int{}
	for rows.Next() {
		var action string
		var n int
		require.NoError(t, rows.Scan(&action, &n))
		got[action] = n
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]int{
		"admin.user_disable": 1, "admin.user_enable": 1, "admin.user_promote": 1, "admin.user_demote": 1,
	}, got, "one event per change, none for refused attempts")

	// The stream shows the change with its target.
	_, body = admin.Get("/admin/activity?action=admin.user_disable")
	require.Len(t, eventIDsIn(t, body), 1)
	require.Contains(t, body, fmt.Sprintf(`href="/admin/users/%d">user #%d</a>`, victimID, victimID))
	require.Contains(t, body, "sessions_ended")
}

func TestAdminActivity(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, _ := b.SignedUpAdmin(t, "auditor")
	_, err := b.Pool.Exec(ctx, `INSERT INTO audit_events (actor_email, action, target_type, target_id, ip, details)
		SELECT 'Loader@Example.com', 'test.load', 'thing', g::text, '198.51.100.7', jsonb_build_object('n', g)
		FROM generate_series(1, 120) g`)
	require.NoError(t, err)
	_, err = b.Pool.Exec(ctx, `INSERT INTO audit_events (actor_email, action, details)
		VALUES ('other@example.com', 'test.other', '{"note": "<script>alert(1)</script>"}')`)
	require.NoError(t, err)

	code, body := admin.Get("/admin/activity")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-nav-activity"`)
	require.Contains(t, body, `data-testid="activity-filter"`)
	ids := eventIDsIn(t, body)
	require.Len(t, ids, 50)
	require.Contains(t, body, "test.other", "newest first")
	require.Contains(t, body, `&lt;script&gt;alert(1)&lt;/script&gt;`, "details are escaped")
	require.NotContains(t, body, "<script>alert")

	// The actor filter is a substring in any case; "Load more" appends
	// older rows until none are left.
	code, body = admin.Get("/admin/activity?actor=loader%40")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `value="loader@"`)
	require.NotContains(t, body, "test.other")
	var all []int64
	all = append(all, eventIDsIn(t, body)...)
	require.Len(t, all, 50)
	more := handlerstest.LinkOf(t, body, "activity-load-more")
	require.Equal(t, fmt.Sprintf("/admin/activity?actor=loader%%40&before=%d", all[49]), more)
	require.Contains(t, body, `hx-get="`+html.EscapeString(more)+`"`)
	require.Contains(t, body, `hx-target="closest tr"`)
	require.Contains(t, body, `hx-swap="outerHTML"`)

	resp, frag := admin.HTMX(more)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(frag, `<tr data-testid="activity-row"`), frag)
	require.NotContains(t, frag, "<table")
	page2 := eventIDsIn(t, frag)
	require.Len(t, page2, 50)
	all = append(all, page2...)
	resp, frag = admin.HTMX(handlerstest.LinkOf(t, frag, "activity-load-more"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	page3 := eventIDsIn(t, frag)
	require.Len(t, page3, 20)
	require.NotContains(t, frag, "activity-load-more", "nothing older is left")
	all = append(all, page3...)
	for i := 1; i < len(all); i++ {
		require.Less(t, all[i], all[i-1], "newest first, no repeats")
	}
	require.True(t, strings.HasSuffix(frag, "{\n  &#34;n&#34;: 1\n}</code></td></tr>"), "the oldest event comes last, its details indented")

	// The action filter is exact.
	_, body = admin.Get("/admin/activity?action=test.load")
	require.Len(t, eventIDsIn(t, body), 50)
	require.NotContains(t, body, "test.other")
	_, body = admin.Get("/admin/activity?action=test.loa")
	require.Empty(t, eventIDsIn(t, body))
	require.Contains(t, body, "No events match.")
	_, body = admin.Get("/admin/activity?action=test.other&actor=other")
	require.Len(t, eventIDsIn(t, body), 1)
	require.NotContains(t, body, "activity-load-more")
}
