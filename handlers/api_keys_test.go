package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

func TestAPIKeyFormErrors(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "formerrors")
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
		{"no scope", url.Values{"name": {"ci"}, "expiry": {"30d"}, "scope": {""}}, "scope", "Choose what the key may do."},
		{"unknown scope", url.Values{"name": {"ci"}, "expiry": {"30d"}, "scope": {"root"}}, "scope", "Choose what the key may do."},
	}
	for _, tt := range tests {
		resp := c.PostKeyForm(tt.form)
		body := handlerstest.ReadBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tt.name)
		require.Contains(t, body, `data-testid="error-`+tt.field+`">`+tt.msg, tt.name)
		if tt.field != "expiry" {
			require.Contains(t, body, `<option value="`+tt.form.Get("expiry")+`" selected`, "%s: the choice is kept", tt.name)
		}
		require.NotContains(t, body, `data-testid="new-api-key"`, tt.name)
	}
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM api_keys").Scan(&n))
	require.Zero(t, n, "nothing is written for a bad form")

	resp := c.PostKeyForm(url.Values{"name": {"ci"}, "expiry": {"date"}, "expires_on": {"2999-12-31"}})
	body := handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "It stops working at 2999-12-31 00:00 UTC.")

	// A form posts once: sent again, or without its id, it creates nothing.
	_, page := c.Get("/settings/api-keys")
	again := url.Values{
		"name": {"twice"}, "expiry": {"never"}, "scope": {"read"},
		"_csrf": {handlerstest.CSRFField.FindStringSubmatch(page)[1]}, "form_id": {handlerstest.FormIDField.FindStringSubmatch(page)[1]},
	}
	for i, want := range []int{http.StatusOK, http.StatusSeeOther} {
		resp, err := c.HTTP.PostForm(c.Base+"/settings/api-keys", again)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "post %d", i+1)
	}
	_, page = c.Get("/settings/api-keys")
	require.Contains(t, page, "No key was created")
	again.Del("form_id")
	resp, err := c.HTTP.PostForm(c.Base+"/settings/api-keys", again)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "no form id")
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM api_keys WHERE name = 'twice'").Scan(&n))
	require.Equal(t, 1, n)

	// In Chinese too, for a user who chose it.
	_, err = b.Pool.Exec(context.Background(), "UPDATE users SET language = 'zh-CN' WHERE email = $1", email)
	require.NoError(t, err)
	_, zhBody := c.Get("/settings/api-keys")
	require.Contains(t, zhBody, "创建 API 密钥")
	require.Contains(t, zhBody, "2999-12-31 00:00 UTC")

	// The page needs a signed-in user.
	code, _ := b.Client(t).Get("/settings/api-keys")
	require.Equal(t, http.StatusSeeOther, code)
}

func TestAPIAuthentication(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	ada, adaEmail := b.SignedUpUser(t, "ada")
	key := ada.CreateKey("laptop")
	handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+key), adaEmail)
	handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "bearer "+key), adaEmail)

	t.Run("malformed headers", func(t *testing.T) {
		require.Equal(t, "Bearer", b.API(t, nil, "/api/v1/me").Header.Get("WWW-Authenticate"))
		require.Equal(t, `Bearer error="invalid_token"`, b.API(t, nil, "/api/v1/me", "Bearer x").Header.Get("WWW-Authenticate"))
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
			handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", headers...), "%q", headers)
		}
	})

	t.Run("unknown and wrong keys", func(t *testing.T) {
		wrong := key[:13] + strings.Repeat("a", 32)
		unknown := "kbn_aaaaaaaa" + key[12:]
		for _, k := range []string{wrong, unknown} {
			if k != key {
				handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", "Bearer "+k), k)
			}
		}
	})

	t.Run("a session cookie alone is not enough", func(t *testing.T) {
		code, _ := ada.Get("/")
		require.Equal(t, http.StatusOK, code)
		handlerstest.RequireUnauthorized(t, b.API(t, ada, "/api/v1/me"))
		// With a cookie and someone else's key, the key decides.
		bob, bobEmail := b.SignedUpUser(t, "bob")
		bobKey := bob.CreateKey("bob's")
		handlerstest.RequireMe(t, b.API(t, ada, "/api/v1/me", "Bearer "+bobKey), bobEmail)
	})

	t.Run("expired key", func(t *testing.T) {
		k := ada.CreateKey("short-lived")
		handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+k), adaEmail)
		_, err := b.Pool.Exec(ctx, "UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", b.KeyID(t, k))
		require.NoError(t, err)
		handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", "Bearer "+k))
		_, body := ada.Get("/settings/api-keys")
		require.Contains(t, body, `api-key-expired" data-testid="api-key-status">Expired`)
	})

	t.Run("disabled account", func(t *testing.T) {
		carol, carolEmail := b.SignedUpUser(t, "carol")
		k := carol.CreateKey("carol's")
		handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+k), carolEmail)
		_, err := b.Pool.Exec(ctx, "UPDATE users SET disabled_at = now() WHERE email = $1", carolEmail)
		require.NoError(t, err)
		handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", "Bearer "+k))
	})

	t.Run("unknown API routes are JSON 404s", func(t *testing.T) {
		r := b.API(t, nil, "/api/v1/nothing", "Bearer "+key)
		require.Equal(t, http.StatusNotFound, r.Status)
		require.JSONEq(t, `{"error":{"code":"not_found","message":"Not found"}}`, r.Body)
	})

	t.Run("messages follow Accept-Language", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, b.Server.URL+"/api/v1/me", nil)
		require.NoError(t, err)
		req.Header.Set("Accept-Language", "zh-CN")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), "有效的 API 密钥")
	})

	// The failures above did not touch the good key.
	handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+key), adaEmail)
}

func TestRevokeSomeoneElsesKey(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ada, adaEmail := b.SignedUpUser(t, "ada")
	eve, _ := b.SignedUpUser(t, "eve")
	key := ada.CreateKey("ada's")
	id := b.KeyID(t, key)
	path := fmt.Sprintf("/settings/api-keys/%d/revoke", id)

	code, body := eve.Get(path)
	require.Equal(t, http.StatusNotFound, code)
	require.NotContains(t, body, "ada's")
	resp := eve.Post("/settings/api-keys", path, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	for _, bad := range []string{"/settings/api-keys/0/revoke", "/settings/api-keys/x/revoke", "/settings/api-keys/99999999999999999999/revoke"} {
		resp := ada.Post("/settings/api-keys", bad, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, bad)
	}
	_, body = eve.Get("/settings/api-keys")
	require.NotContains(t, body, key[:12])

	handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+key), adaEmail)
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_events WHERE action = 'api_key.revoke'").Scan(&n))
	require.Zero(t, n)

	// The owner can.
	code, body = ada.Get(path)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Revoke the key “ada&#39;s” ("+key[:12]+"…)?")
	resp = ada.Post(path, path, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/settings/api-keys", resp.Header.Get("Location"))
	handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", "Bearer "+key))
}

// TestAPIAuthFailuresRateLimited: an address that keeps sending bad keys
// is told to wait; working keys still work from it.
func TestAPIAuthFailuresRateLimited(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "limited")
	key := c.CreateKey("ci")
	bad := "Bearer kbn_aaaaaaaa_" + strings.Repeat("a", 32)
	for i := 1; i <= 50; i++ {
		handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", bad), "attempt %d", i)
	}
	r := b.API(t, nil, "/api/v1/me", bad)
	require.Equal(t, http.StatusTooManyRequests, r.Status)
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Contains(t, r.Body, `"code":"too_many_requests"`)
	handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+key), email)
}

// TestAPIKeyScopes: a read key reads, and every write under /api/v1 is
// 403 insufficient_scope for it, before anything is looked up; a write key
// gets past that on the same routes. The console shows each key's access
// and the address it was last used from, and offers admin keys only to
// admins.
func TestAPIKeyScopes(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ada, adaEmail := b.SignedUpUser(t, "ada")
	read := ada.CreateScopedKey("dashboards", "read")
	write := ada.CreateScopedKey("pipeline", "write")
	handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+read), adaEmail)
	r := b.APICall(t, http.MethodGet, "/api/v1/clusters", read, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)

	writes := 0
	for _, route := range b.Echo.Routes() {
		// The admin API refuses every key but an admin key
		// (TestAdminAPINeedsAdminKey).
		if !strings.HasPrefix(route.Path, handlerstest.APIPrefix) || strings.HasPrefix(route.Path, "/api/v1/edge/") ||
			strings.HasPrefix(route.Path, "/api/v1/admin/") || route.Method == http.MethodGet || strings.HasPrefix(route.Method, "echo_route_") {
			continue
		}
		writes++
		path := strings.NewReplacer(":id", "1", ":name", "worker-1").Replace(route.Path)
		r := b.APICall(t, route.Method, path, read, `{}`)
		require.Equal(t, http.StatusForbidden, r.Status, "%s %s: %s", route.Method, path, r.Body)
		require.Equal(t, "insufficient_scope", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Code)
		require.Equal(t, `Bearer error="insufficient_scope", scope="write"`, r.Header.Get("WWW-Authenticate"))
		r = b.APICall(t, route.Method, path, write, `{}`)
		require.NotEqual(t, http.StatusForbidden, r.Status, "%s %s with a write key: %s", route.Method, path, r.Body)
	}
	require.GreaterOrEqual(t, writes, 9, "the API's writes were all tried")

	_, body := ada.Get("/settings/api-keys")
	require.Contains(t, body, `data-testid="api-key-scope">Read only<`)
	require.Contains(t, body, `data-testid="api-key-scope">Read and write<`)
	require.Contains(t, body, `data-testid="api-key-last-used-ip">from 127.0.0.1<`)
	require.Contains(t, body, `value="read" checked`, "read only is the form's choice")
	require.NotContains(t, body, `data-testid="api-key-scope-admin"`, "no admin keys for users")

	// A user asking for an admin key anyway is told so, and gets none.
	resp := ada.PostKeyForm(url.Values{"name": {"sneaky"}, "expiry": {"never"}, "scope": {"admin"}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, "Only admins can create admin keys.")
	require.NotContains(t, body, "sneaky<")

	admin, _ := b.SignedUpAdmin(t, "root")
	_, body = admin.Get("/settings/api-keys")
	require.Contains(t, body, `data-testid="api-key-scope-admin"`)
	resp = admin.PostKeyForm(url.Values{"name": {"ops"}, "expiry": {"never"}, "scope": {"admin"}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "Access: Admin.", "the new key's page says its access")
}
