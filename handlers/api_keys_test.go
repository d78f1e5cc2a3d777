package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

var newKeyInPage = regexp.MustCompile(`id="new-api-key"[^>]* value="(kbn_[a-z2-7]{8}_[a-z2-7]{32})"`)

var formIDField = regexp.MustCompile(`name="form_id" value="([^"]+)"`)

// postKeyForm sends the create form as the page shows it: with its CSRF
// token and form id.
func (c *client) postKeyForm(form url.Values) *http.Response {
	c.t.Helper()
	return c.postShownForm("/settings/api-keys", "/settings/api-keys", form)
}

// postShownForm sends a form that posts once (a form id in the session)
// as page shows it, with its CSRF token and form id, to path.
func (c *client) postShownForm(page, path string, form url.Values) *http.Response {
	c.t.Helper()
	_, body := c.get(page)
	csrf, id := csrfField.FindStringSubmatch(body), formIDField.FindStringSubmatch(body)
	require.NotNil(c.t, csrf, body)
	require.NotNil(c.t, id, body)
	form.Set("_csrf", csrf[1])
	form.Set("form_id", id[1])
	resp, err := c.http.PostForm(c.base+path, form)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// createKey creates an API key through the settings form and returns it.
func (c *client) createKey(name string) string {
	c.t.Helper()
	resp := c.postKeyForm(url.Values{"name": {name}, "expiry": {"never"}})
	body := readBody(c.t, resp)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, body)
	require.Equal(c.t, "no-store", resp.Header.Get("Cache-Control"))
	m := newKeyInPage.FindStringSubmatch(body)
	require.NotNil(c.t, m, "no key on the page: %s", body)
	return m[1]
}

// keyID is the id of the key with this value, from the database.
func (b *testBundle) keyID(t *testing.T, key string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT id FROM api_keys WHERE prefix = $1", key[:12]).Scan(&id))
	return id
}

type apiResponse struct {
	status int
	header http.Header
	body   string
}

// api calls the JSON API with the Authorization header values given (none,
// one, or several), through client c (nil: no cookies).
func (b *testBundle) api(t *testing.T, c *client, path string, authorization ...string) apiResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.server.URL+path, nil)
	require.NoError(t, err)
	for _, a := range authorization {
		req.Header.Add("Authorization", a)
	}
	hc := http.DefaultClient
	if c != nil {
		hc = c.http
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return apiResponse{status: resp.StatusCode, header: resp.Header, body: readBody(t, resp)}
}

// requireUnauthorized checks the API's answer to a request without a
// working key.
func requireUnauthorized(t *testing.T, r apiResponse, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, http.StatusUnauthorized, r.status, msgAndArgs...)
	require.Equal(t, "application/json", r.header.Get("Content-Type"), msgAndArgs...)
	require.True(t, strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer"), msgAndArgs...)
	var body struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.body), &body), msgAndArgs...)
	require.Equal(t, "unauthorized", body.Error.Code, msgAndArgs...)
	require.Contains(t, body.Error.Message, "Send a valid API key", msgAndArgs...)
}

// requireMe checks that GET /api/v1/me answered with the account of email.
func requireMe(t *testing.T, r apiResponse, email string) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, r.body)
	var me map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.body), &me))
	require.Equal(t, email, me["email"])
	require.ElementsMatch(t, []string{"id", "email", "name", "role", "language", "created_at"}, keys(me))
	require.Equal(t, "user", me["role"])
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestAPIKeyInBrowser is the whole journey: create a key in the settings,
// see it once, use it with the API, revoke it.
func TestAPIKeyInBrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, email := b.signedUpUser(t, "keyholder")
	ctx := testenv.Browser(t)

	var key, copyLabel string
	var copyVisible bool
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.server.URL+"/settings/api-keys"),
		chromedp.WaitVisible(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "password of keyholder", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="api-key-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="api-keys-empty"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#name`, "CI pipeline", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="api-key-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="new-api-key"]`, chromedp.ByQuery),
		chromedp.Value(`[data-testid="new-api-key"]`, &key, chromedp.ByQuery),
		// copy.js shows the copy button (it is hidden without JavaScript).
		chromedp.WaitVisible(`[data-testid="copy-api-key"]`, chromedp.ByQuery),
		chromedp.Evaluate(`!document.querySelector('[data-testid="copy-api-key"]').hidden`, &copyVisible),
		chromedp.Click(`[data-testid="copy-api-key"]`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('[data-testid="copy-api-key"]').textContent === "Copied"`, nil),
		chromedp.Text(`[data-testid="copy-api-key"]`, &copyLabel, chromedp.ByQuery),
	))
	require.Regexp(t, `^kbn_[a-z2-7]{8}_[a-z2-7]{32}$`, key)
	require.True(t, copyVisible)
	require.Equal(t, "Copied", copyLabel)

	// Reloading sends the form again: that neither shows the key again nor
	// creates another; the list shows only the key's prefix.
	var html, flash, prefix, status string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(`[data-testid="api-keys"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.OuterHTML(`html`, &html, chromedp.ByQuery),
		chromedp.Text(`[data-testid="api-key-prefix"]`, &prefix, chromedp.ByQuery),
		chromedp.Text(`[data-testid="api-key-status"]`, &status, chromedp.ByQuery),
	))
	require.Contains(t, flash, "No key was created")
	require.NotContains(t, html, key[13:])
	require.NotContains(t, html, `data-testid="new-api-key"`)
	require.Equal(t, key[:12]+"…", prefix)
	require.Equal(t, "Active", status)
	require.Contains(t, html, "CI pipeline")
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM api_keys").Scan(&n))
	require.Equal(t, 1, n)

	requireMe(t, b.api(t, nil, "/api/v1/me", "Bearer "+key), email)
	var lastUsed string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Reload(),
		chromedp.Text(`[data-testid="api-key-last-used"]`, &lastUsed, chromedp.ByQuery),
	))
	require.NotEqual(t, "Never", lastUsed, "the use was recorded")

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`[data-testid="api-key-revoke"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="api-key-revoke-form"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="api-key-revoke-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.Text(`[data-testid="api-key-status"]`, &status, chromedp.ByQuery),
	))
	require.Equal(t, "The API key was revoked.", flash)
	require.Equal(t, "Revoked", status)
	requireUnauthorized(t, b.api(t, nil, "/api/v1/me", "Bearer "+key))

	// Both changes were audited, as the key's owner.
	id := b.keyID(t, key)
	for _, action := range []string{"api_key.create", "api_key.revoke"} {
		var actor string
		require.NoError(t, b.pool.QueryRow(context.Background(),
			"SELECT actor_email FROM audit_events WHERE action = $1 AND target_type = 'api_key' AND target_id = $2",
			action, fmt.Sprint(id)).Scan(&actor), action)
		require.Equal(t, email, actor, action)
	}
}

func TestAPIKeyFormErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, email := b.signedUpUser(t, "formerrors")
	tests := []struct {
		name  string
		form  url.Values
		field string
		msg   string
	}{
		{"no name", url.Values{"name": {" "}, "expiry": {"30d"}}, "name", "Enter a name for the key."},
		{"long name", url.Values{"name": {strings.Repeat("n", 101)}, "expiry": {"30d"}}, "name", "Use at most 100 characters."},
		{"unknown expiry", url.Values{"name": {"ci"}, "expiry": {"forever"}}, "expiry", "Choose when the key expires."},
		{"no date", url.Values{"name": {"ci"}, "expiry": {"date"}}, "expires_on", "Enter the date the key expires."},
		{"bad date", url.Values{"name": {"ci"}, "expiry": {"date"}, "expires_on": {"tomorrow"}}, "expires_on", "Enter a date such as 2030-12-31."},
		{"past date", url.Values{"name": {"ci"}, "expiry": {"date"}, "expires_on": {"2020-01-01"}}, "expires_on", "Choose a date after today."},
	}
	for _, tt := range tests {
		resp := c.postKeyForm(tt.form)
		body := readBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tt.name)
		require.Contains(t, body, `data-testid="error-`+tt.field+`">`+tt.msg, tt.name)
		if tt.field != "expiry" {
			require.Contains(t, body, `<option value="`+tt.form.Get("expiry")+`" selected`, "%s: the choice is kept", tt.name)
		}
		require.NotContains(t, body, `data-testid="new-api-key"`, tt.name)
	}
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM api_keys").Scan(&n))
	require.Zero(t, n, "nothing is written for a bad form")

	resp := c.postKeyForm(url.Values{"name": {"ci"}, "expiry": {"date"}, "expires_on": {"2999-12-31"}})
	body := readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "It stops working at 2999-12-31 00:00 UTC.")

	// A form posts once: sent again, or without its id, it creates nothing.
	_, page := c.get("/settings/api-keys")
	again := url.Values{
		"name": {"twice"}, "expiry": {"never"},
		"_csrf": {csrfField.FindStringSubmatch(page)[1]}, "form_id": {formIDField.FindStringSubmatch(page)[1]},
	}
	for i, want := range []int{http.StatusOK, http.StatusSeeOther} {
		resp, err := c.http.PostForm(c.base+"/settings/api-keys", again)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "post %d", i+1)
	}
	_, page = c.get("/settings/api-keys")
	require.Contains(t, page, "No key was created")
	again.Del("form_id")
	resp, err := c.http.PostForm(c.base+"/settings/api-keys", again)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "no form id")
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM api_keys WHERE name = 'twice'").Scan(&n))
	require.Equal(t, 1, n)

	// In Chinese too, for a user who chose it.
	_, err = b.pool.Exec(context.Background(), "UPDATE users SET language = 'zh-CN' WHERE email = $1", email)
	require.NoError(t, err)
	_, zhBody := c.get("/settings/api-keys")
	require.Contains(t, zhBody, "创建 API 密钥")
	require.Contains(t, zhBody, "2999-12-31 00:00 UTC")

	// The page needs a signed-in user.
	code, _ := b.client(t).get("/settings/api-keys")
	require.Equal(t, http.StatusSeeOther, code)
}

func TestAPIAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ada, adaEmail := b.signedUpUser(t, "ada")
	key := ada.createKey("laptop")
	requireMe(t, b.api(t, nil, "/api/v1/me", "Bearer "+key), adaEmail)
	requireMe(t, b.api(t, nil, "/api/v1/me", "bearer "+key), adaEmail)

	t.Run("malformed headers", func(t *testing.T) {
		require.Equal(t, "Bearer", b.api(t, nil, "/api/v1/me").header.Get("WWW-Authenticate"))
		require.Equal(t, `Bearer error="invalid_token"`, b.api(t, nil, "/api/v1/me", "Bearer x").header.Get("WWW-Authenticate"))
		for _, headers := range [][]string{
			nil,
			{""},
			{"Bearer"},
			{"Bearer "},
			{key},
			{"Basic " + key},
			{"Bearer  " + key},
			{"Bearer " + key + " " + key},
			{"Bearer " + strings.ToUpper(key)},
			{"Bearer " + key[:len(key)-1]},
			{"Bearer " + key + "x"},
			{"Bearer " + key, "Bearer " + key},
		} {
			requireUnauthorized(t, b.api(t, nil, "/api/v1/me", headers...), "%q", headers)
		}
	})

	t.Run("unknown and wrong keys", func(t *testing.T) {
		wrong := key[:13] + strings.Repeat("a", 32)
		unknown := "kbn_aaaaaaaa" + key[12:]
		for _, k := range []string{wrong, unknown} {
			if k != key {
				requireUnauthorized(t, b.api(t, nil, "/api/v1/me", "Bearer "+k), k)
			}
		}
	})

	t.Run("a session cookie alone is not enough", func(t *testing.T) {
		code, _ := ada.get("/")
		require.Equal(t, http.StatusOK, code)
		requireUnauthorized(t, b.api(t, ada, "/api/v1/me"))
		// With a cookie and someone else's key, the key decides.
		bob, bobEmail := b.signedUpUser(t, "bob")
		bobKey := bob.createKey("bob's")
		requireMe(t, b.api(t, ada, "/api/v1/me", "Bearer "+bobKey), bobEmail)
	})

	t.Run("expired key", func(t *testing.T) {
		k := ada.createKey("short-lived")
		requireMe(t, b.api(t, nil, "/api/v1/me", "Bearer "+k), adaEmail)
		_, err := b.pool.Exec(ctx, "UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", b.keyID(t, k))
		require.NoError(t, err)
		requireUnauthorized(t, b.api(t, nil, "/api/v1/me", "Bearer "+k))
		_, body := ada.get("/settings/api-keys")
		require.Contains(t, body, `api-key-expired" data-testid="api-key-status">Expired`)
	})

	t.Run("disabled account", func(t *testing.T) {
		carol, carolEmail := b.signedUpUser(t, "carol")
		k := carol.createKey("carol's")
		requireMe(t, b.api(t, nil, "/api/v1/me", "Bearer "+k), carolEmail)
		_, err := b.pool.Exec(ctx, "UPDATE users SET disabled_at = now() WHERE email = $1", carolEmail)
		require.NoError(t, err)
		requireUnauthorized(t, b.api(t, nil, "/api/v1/me", "Bearer "+k))
	})

	t.Run("unknown API routes are JSON 404s", func(t *testing.T) {
		r := b.api(t, nil, "/api/v1/nothing", "Bearer "+key)
		require.Equal(t, http.StatusNotFound, r.status)
		require.JSONEq(t, `{"error":{"code":"not_found","message":"Not found"}}`, r.body)
	})

	t.Run("messages follow Accept-Language", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, b.server.URL+"/api/v1/me", nil)
		require.NoError(t, err)
		req.Header.Set("Accept-Language", "zh-CN")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Contains(t, readBody(t, resp), "有效的 API 密钥")
	})

	// The failures above did not touch the good key.
	requireMe(t, b.api(t, nil, "/api/v1/me", "Bearer "+key), adaEmail)
}

func TestRevokeSomeoneElsesKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ada, adaEmail := b.signedUpUser(t, "ada")
	eve, _ := b.signedUpUser(t, "eve")
	key := ada.createKey("ada's")
	id := b.keyID(t, key)
	path := fmt.Sprintf("/settings/api-keys/%d/revoke", id)

	code, body := eve.get(path)
	require.Equal(t, http.StatusNotFound, code)
	require.NotContains(t, body, "ada's")
	resp := eve.post("/settings/api-keys", path, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	for _, bad := range []string{"/settings/api-keys/0/revoke", "/settings/api-keys/x/revoke", "/settings/api-keys/99999999999999999999/revoke"} {
		resp := ada.post("/settings/api-keys", bad, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, bad)
	}
	_, body = eve.get("/settings/api-keys")
	require.NotContains(t, body, key[:12])

	requireMe(t, b.api(t, nil, "/api/v1/me", "Bearer "+key), adaEmail)
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_events WHERE action = 'api_key.revoke'").Scan(&n))
	require.Zero(t, n)

	// The owner can.
	code, body = ada.get(path)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Revoke the key “ada&#39;s” ("+key[:12]+"…)?")
	resp = ada.post(path, path, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/settings/api-keys", resp.Header.Get("Location"))
	requireUnauthorized(t, b.api(t, nil, "/api/v1/me", "Bearer "+key))
}

// TestAPIAuthFailuresRateLimited: an address that keeps sending bad keys
// is told to wait; working keys still work from it.
func TestAPIAuthFailuresRateLimited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, email := b.signedUpUser(t, "limited")
	key := c.createKey("ci")
	bad := "Bearer kbn_aaaaaaaa_" + strings.Repeat("a", 32)
	for i := 1; i <= 50; i++ {
		requireUnauthorized(t, b.api(t, nil, "/api/v1/me", bad), "attempt %d", i)
	}
	r := b.api(t, nil, "/api/v1/me", bad)
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.Contains(t, r.body, `"code":"too_many_requests"`)
	requireMe(t, b.api(t, nil, "/api/v1/me", "Bearer "+key), email)
}
