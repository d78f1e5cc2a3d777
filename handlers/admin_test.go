package handlers_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

// signedUpAdmin is a signed-in user made an admin; the password is
// "password of <name>".
func (b *testBundle) signedUpAdmin(t *testing.T, name string) (*client, string) {
	t.Helper()
	c, email := b.signedUpUser(t, name)
	_, err := b.pool.Exec(context.Background(), "UPDATE users SET role = 'admin' WHERE email = $1", email)
	require.NoError(t, err)
	return c, email
}

// htmx fetches path as htmx does, returning the response and its body.
func (c *client) htmx(path string) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	require.NoError(c.t, err)
	req.Header.Set("HX-Request", "true")
	resp, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp, string(body)
}

// linkOf returns the href of the link with a data-testid, unescaped.
func linkOf(t *testing.T, body, testID string) string {
	t.Helper()
	m := regexp.MustCompile(`<a href="([^"]+)"[^>]*data-testid="` + regexp.QuoteMeta(testID) + `"`).FindStringSubmatch(body)
	require.NotNil(t, m, "no link %s in %s", testID, body)
	return html.UnescapeString(m[1])
}

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
	b := setup(t)
	user, userEmail := b.signedUpUser(t, "plain")
	id := b.userID(t, userEmail)
	visitor := b.client(t)

	_, body := user.get("/")
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
		c        *client
		formPage string // a page with a CSRF token, so that the POST is not refused for its lack
	}{{"visitor", visitor, "/login"}, {"user", user, "/"}} {
		for _, path := range gets {
			t.Run(who.name+" GET "+path, func(t *testing.T) {
				code, body := who.c.get(path)
				require.Equal(t, http.StatusNotFound, code)
				require.Contains(t, body, "Page not found")
				resp, _ := who.c.htmx(path)
				require.Equal(t, http.StatusNotFound, resp.StatusCode)
			})
		}
		for _, path := range posts {
			t.Run(who.name+" POST "+path, func(t *testing.T) {
				resp := who.c.post(who.formPage, path, url.Values{"password": {"password of plain"}, "chartVersion": {"0.0.1"}})
				require.Equal(t, http.StatusNotFound, resp.StatusCode)
			})
		}
	}
	var role string
	var disabled bool
	require.NoError(t, b.pool.QueryRow(context.Background(),
		"SELECT role, disabled_at IS NOT NULL FROM users WHERE id = $1", id).Scan(&role, &disabled))
	require.Equal(t, "user", role)
	require.False(t, disabled)
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_events WHERE action LIKE 'admin.%'").Scan(&n))
	require.Zero(t, n)
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM settings").Scan(&n))
	require.Zero(t, n, "no settings were written")
}

func TestAdminUserListSearchAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, adminEmail := b.signedUpAdmin(t, "lister")
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `INSERT INTO users (email, name)
		SELECT 'member' || g || '@bulk.example', 'Member ' || g FROM generate_series(1, 60) g`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO users (email, name, email_verified_at, disabled_at)
		VALUES ('gh@navy.example', 'Grace Hopper', now(), now())`)
	require.NoError(t, err)

	code, body := admin.get("/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="nav-admin"`)

	// The first page of everyone: 25 of 62, the admin first.
	code, body = admin.get("/admin/users")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-nav-users"`)
	require.Contains(t, body, `data-testid="admin-user-search"`)
	require.Equal(t, 25, strings.Count(body, `data-testid="admin-user-row"`))
	require.Contains(t, body, adminEmail)
	require.Contains(t, body, `data-status="active"`)
	require.Contains(t, body, `data-status="unverified"`)
	require.Contains(t, body, "Never", "members never signed in")
	require.Equal(t, "/admin/users?after="+strconv.FormatInt(b.userID(t, "member24@bulk.example"), 10), linkOf(t, body, "admin-users-next"))

	// Paging through the 60 members, without JavaScript.
	next := "/admin/users?q=" + url.QueryEscape("@BULK.")
	var sizes []int
	seen := map[string]bool{}
	for next != "" {
		code, body = admin.get(next)
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `value="@BULK."`, "the search box keeps the search")
		require.Equal(t, len(sizes) > 0, strings.Contains(body, `data-testid="admin-users-first"`), "a link back to the first page, from the others")
		sizes = append(sizes, strings.Count(body, `data-testid="admin-user-row"`))
		for _, m := range regexp.MustCompile(`member\d+@bulk\.example`).FindAllString(body, -1) {
			seen[m] = true
		}
		next = ""
		if strings.Contains(body, `data-testid="admin-users-next"`) {
			next = linkOf(t, body, "admin-users-next")
			require.Contains(t, next, "q=%40BULK.", "the next page keeps the search")
		}
	}
	require.Equal(t, []int{25, 25, 10}, sizes)
	require.Len(t, seen, 60)

	// Searching by name, any case; the plain form answers with the page.
	code, body = admin.get("/admin/users?q=hopper")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "<!doctype html>")
	require.Equal(t, 1, strings.Count(body, `data-testid="admin-user-row"`))
	require.Contains(t, body, "gh@navy.example")
	require.Contains(t, body, `data-status="disabled"`)
	require.NotContains(t, body, `data-testid="admin-users-next"`)

	// htmx gets only the results.
	resp, body := admin.htmx("/admin/users?q=GRACE")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Values("Vary"), "HX-Request")
	require.True(t, strings.HasPrefix(body, `<div id="admin-users-results"`), body)
	require.NotContains(t, body, "<html")
	require.NotContains(t, body, `data-testid="admin-user-search"`)
	require.Equal(t, 1, strings.Count(body, `data-testid="admin-user-row"`))
	require.Contains(t, body, "gh@navy.example")

	_, body = admin.htmx("/admin/users?q=nobody-at-all")
	require.Contains(t, body, "No users match.")
	require.Zero(t, strings.Count(body, `data-testid="admin-user-row"`))
}

func TestAdminUserActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	admin, adminEmail := b.signedUpAdmin(t, "boss")
	adminID := b.userID(t, adminEmail)
	victim, victimEmail := b.signedUpUser(t, "victim")
	victimID := b.userID(t, victimEmail)
	page := fmt.Sprintf("/admin/users/%d", victimID)
	const adminPassword = "password of boss"
	state := func() (role string, disabled bool) {
		t.Helper()
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT role, disabled_at IS NOT NULL FROM users WHERE id = $1", victimID).Scan(&role, &disabled))
		return role, disabled
	}
	signedIn := func(c *client) bool {
		t.Helper()
		code, body := c.get("/")
		require.Equal(t, http.StatusOK, code)
		return strings.Contains(body, `data-testid="dashboard-greeting"`)
	}

	code, body := admin.get(page)
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
		resp := admin.post(page, page+"/disable", url.Values{"password": {"not the password"}})
		body := readBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, body, `data-testid="error-password-disable">That is not your password. Nothing was changed.`)
		role, disabled := state()
		require.Equal(t, "user", role)
		require.False(t, disabled)
		require.True(t, signedIn(victim))
	})

	t.Run("disable ends sessions and sign-in", func(t *testing.T) {
		resp := admin.post(page, page+"/disable", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
		require.Equal(t, page, resp.Header.Get("Location"))
		_, body := admin.get(page)
		require.Contains(t, body, "The account is disabled and signed out everywhere.")
		require.Contains(t, body, `data-status="disabled"`)
		require.Contains(t, body, `data-testid="admin-form-enable"`)
		require.NotContains(t, body, `data-testid="admin-form-disable"`)
		require.Zero(t, strings.Count(body, `data-testid="admin-session-row"`))
		_, disabled := state()
		require.True(t, disabled)

		require.False(t, signedIn(victim), "the open session ended")
		resp = victim.post("/login", "/login", url.Values{"email": {victimEmail}, "password": {"password of victim"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Contains(t, readBody(t, resp), "This account is disabled.")
	})

	t.Run("disable again is no change", func(t *testing.T) {
		resp := admin.post(page, page+"/disable", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, readBody(t, resp), "Nothing changed: the account was already like that.")
	})

	t.Run("enable", func(t *testing.T) {
		resp := admin.post(page, page+"/enable", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
		_, disabled := state()
		require.False(t, disabled)
		require.False(t, signedIn(victim), "enabling does not revive old sessions")
		resp = victim.post("/login", "/login", url.Values{"email": {victimEmail}, "password": {"password of victim"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.True(t, signedIn(victim))
	})

	t.Run("promote and demote", func(t *testing.T) {
		code, _ := victim.get("/admin/users")
		require.Equal(t, http.StatusNotFound, code)

		resp := admin.post(page, page+"/promote", url.Values{"password": {"wrong"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, readBody(t, resp), `data-testid="error-password-promote"`)
		role, _ := state()
		require.Equal(t, "user", role)

		resp = admin.post(page, page+"/promote", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
		_, body := admin.get(page)
		require.Contains(t, body, "The account is now an admin.")
		require.Contains(t, body, `data-testid="admin-form-demote"`)
		code, _ = victim.get("/admin/users")
		require.Equal(t, http.StatusOK, code)

		resp = admin.post(page, page+"/demote", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
		role, _ = state()
		require.Equal(t, "user", role)
		code, _ = victim.get("/admin/users")
		require.Equal(t, http.StatusNotFound, code)
	})

	t.Run("not on oneself", func(t *testing.T) {
		self := fmt.Sprintf("/admin/users/%d", adminID)
		_, body := admin.get(self)
		require.Contains(t, body, `data-testid="admin-self-note"`)
		require.NotContains(t, body, `data-testid="admin-form-disable"`)
		require.NotContains(t, body, `data-testid="admin-form-demote"`)

		resp := admin.post(self, self+"/disable", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, readBody(t, resp), "You cannot disable your own account.")
		resp = admin.post(self, self+"/demote", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, readBody(t, resp), "You cannot remove your own admin role.")
		code, _ := admin.get("/admin/users")
		require.Equal(t, http.StatusOK, code, "still an admin, still signed in")
	})

	t.Run("unknown account", func(t *testing.T) {
		code, _ := admin.get("/admin/users/999999")
		require.Equal(t, http.StatusNotFound, code)
		resp := admin.post(page, "/admin/users/999999/disable", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	rows, err := b.pool.Query(ctx, `SELECT action, count(*) FROM audit_events
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
	_, body = admin.get("/admin/activity?action=admin.user_disable")
	require.Len(t, eventIDsIn(t, body), 1)
	require.Contains(t, body, fmt.Sprintf(`href="/admin/users/%d">user #%d</a>`, victimID, victimID))
	require.Contains(t, body, "sessions_ended")
}

func TestAdminActivity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	admin, _ := b.signedUpAdmin(t, "auditor")
	_, err := b.pool.Exec(ctx, `INSERT INTO audit_events (actor_email, action, target_type, target_id, ip, details)
		SELECT 'Loader@Example.com', 'test.load', 'thing', g::text, '198.51.100.7', jsonb_build_object('n', g)
		FROM generate_series(1, 120) g`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO audit_events (actor_email, action, details)
		VALUES ('other@example.com', 'test.other', '{"note": "<script>alert(1)</script>"}')`)
	require.NoError(t, err)

	code, body := admin.get("/admin/activity")
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
	code, body = admin.get("/admin/activity?actor=loader%40")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `value="loader@"`)
	require.NotContains(t, body, "test.other")
	var all []int64
	all = append(all, eventIDsIn(t, body)...)
	require.Len(t, all, 50)
	more := linkOf(t, body, "activity-load-more")
	require.Equal(t, fmt.Sprintf("/admin/activity?actor=loader%%40&before=%d", all[49]), more)
	require.Contains(t, body, `hx-get="`+html.EscapeString(more)+`"`)
	require.Contains(t, body, `hx-target="closest tr"`)
	require.Contains(t, body, `hx-swap="outerHTML"`)

	resp, frag := admin.htmx(more)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(frag, `<tr data-testid="activity-row"`), frag)
	require.NotContains(t, frag, "<table")
	page2 := eventIDsIn(t, frag)
	require.Len(t, page2, 50)
	all = append(all, page2...)
	resp, frag = admin.htmx(linkOf(t, frag, "activity-load-more"))
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
	_, body = admin.get("/admin/activity?action=test.load")
	require.Len(t, eventIDsIn(t, body), 50)
	require.NotContains(t, body, "test.other")
	_, body = admin.get("/admin/activity?action=test.loa")
	require.Empty(t, eventIDsIn(t, body))
	require.Contains(t, body, "No events match.")
	_, body = admin.get("/admin/activity?action=test.other&actor=other")
	require.Len(t, eventIDsIn(t, body), 1)
	require.NotContains(t, body, "activity-load-more")
}

// TestAdminDisablesUserInBrowser is the admin journey: find a user with the
// search box, open the account, disable it with the password.
func TestAdminDisablesUserInBrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, adminEmail := b.signedUpAdmin(t, "chief")
	_, victimEmail := b.signedUpUser(t, "target")
	_, bystanderEmail := b.signedUpUser(t, "bystander")
	ctx := testenv.Browser(t)

	var location, status, flash string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.server.URL+"/login"),
		chromedp.WaitVisible(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, adminEmail, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "password of chief", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dashboard-greeting"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="nav-admin"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="admin-user-search-q"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="admin-user-`+bystanderEmail+`"]`, chromedp.ByQuery),
		// Typing searches as htmx: the bystander goes, with no page load.
		chromedp.Evaluate(`window.notReloaded = true`, nil),
		chromedp.SendKeys(`[data-testid="admin-user-search-q"]`, "TARGET-", chromedp.ByQuery),
		chromedp.WaitNotPresent(`[data-testid="admin-user-`+bystanderEmail+`"]`, chromedp.ByQuery),
		chromedp.Evaluate(`location.pathname + location.search`, &location),
	))
	var notReloaded bool
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.notReloaded === true`, &notReloaded)))
	require.True(t, notReloaded, "the search ran without a page load")
	require.Equal(t, "/admin/users?q=TARGET-", location, "the search is in the address bar")

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`[data-testid="admin-user-`+victimEmail+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="admin-form-disable"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="admin-user-status"]`, &status, chromedp.ByQuery),
	))
	require.Equal(t, "Active", strings.TrimSpace(status))

	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#confirm-disable`, "password of chief", chromedp.ByQuery),
		chromedp.Click(`[data-testid="admin-disable"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.Text(`[data-testid="admin-user-status"]`, &status, chromedp.ByQuery),
	))
	require.Equal(t, "The account is disabled and signed out everywhere.", flash)
	require.Equal(t, "Disabled", strings.TrimSpace(status))
	var disabled bool
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT disabled_at IS NOT NULL FROM users WHERE email = $1", victimEmail).Scan(&disabled))
	require.True(t, disabled)
}
