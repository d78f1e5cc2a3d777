package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

type apiKeyJSON struct {
	ID         int64   `json:"id"`
	Name       string  `json:"name"`
	Prefix     string  `json:"prefix"`
	Scope      string  `json:"scope"`
	Status     string  `json:"status"`
	ExpiresAt  *string `json:"expires_at"`
	RevokedAt  *string `json:"revoked_at"`
	LastUsedAt *string `json:"last_used_at"`
	LastUsedIP string  `json:"last_used_ip"`
	Key        string  `json:"key"`
}

// TestAPIKeysOfTheCaller: a key lists its owner's keys a page at a time
// (never a secret), makes keys of at most its own scope (the value
// answered once), and revokes them; as the console does, audited.
func TestAPIKeysOfTheCaller(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "keymaker")
	read := c.CreateScopedKey("dashboards", "read")
	write := c.CreateScopedKey("pipeline", "write")

	r := b.APICall(t, http.MethodPost, "/api/v1/api-keys", write, `{"name":"ci"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	made := handlerstest.DecodeAs[apiKeyJSON](t, r)
	require.Equal(t, fmt.Sprintf("/api/v1/api-keys/%d", made.ID), r.Header.Get("Location"))
	require.Equal(t, "read", made.Scope, "read only unless asked")
	require.Equal(t, "active", made.Status)
	require.NotNil(t, made.ExpiresAt, "90 days unless asked")
	require.True(t, strings.HasPrefix(made.Key, made.Prefix))
	handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+made.Key), email)
	r = b.APICall(t, http.MethodPost, "/api/v1/clusters", made.Key, `{"name":"nope"}`)
	require.Equal(t, http.StatusForbidden, r.Status, "a read key")

	r = b.APICall(t, http.MethodPost, "/api/v1/api-keys", write, `{"name":"deploys","scope":"write","expiry":"never"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	deploys := handlerstest.DecodeAs[apiKeyJSON](t, r)
	require.Nil(t, deploys.ExpiresAt)
	r = b.APICall(t, http.MethodPost, "/api/v1/api-keys", write, `{"name":"dated","expires_on":"2999-12-31"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	require.Equal(t, "2999-12-31T00:00:00Z", *handlerstest.DecodeAs[apiKeyJSON](t, r).ExpiresAt)

	// No key makes one above its own scope.
	r = b.APICall(t, http.MethodPost, "/api/v1/api-keys", write, `{"name":"sneaky","scope":"admin"}`)
	require.Equal(t, http.StatusForbidden, r.Status, r.Body)
	require.Equal(t, "insufficient_scope", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Code)
	require.Equal(t, `Bearer error="insufficient_scope", scope="admin"`, r.Header.Get("WWW-Authenticate"))
	r = b.APICall(t, http.MethodPost, "/api/v1/api-keys", read, `{"name":"sneaky"}`)
	require.Equal(t, http.StatusForbidden, r.Status, r.Body)

	tests := []struct {
		body  string
		field string
	}{
		{`{"name":" "}`, "name"},
		{`{"name":"` + strings.Repeat("n", 101) + `"}`, "name"},
		{`{"name":"x","scope":"root"}`, "scope"},
		{`{"name":"x","expiry":"forever"}`, "expiry"},
		{`{"name":"x","expiry":"date"}`, "expires_on"},
		{`{"name":"x","expires_on":"tomorrow"}`, "expires_on"},
		{`{"name":"x","expires_on":"2020-01-01"}`, "expires_on"},
	}
	for _, tt := range tests {
		requireInvalid(t, b.APICall(t, http.MethodPost, "/api/v1/api-keys", write, tt.body), tt.field)
	}
	r = b.APICall(t, http.MethodPost, "/api/v1/api-keys", write, `{"name":"x","secret":"mine"}`)
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)

	// Five keys, newest first, two a page; the read key too can list them.
	var all []apiKeyJSON
	pages := readPages(t, b, read, "/api/v1/api-keys?limit=2")
	require.Len(t, pages, 3)
	for _, r := range pages {
		for _, k := range []string{read, write, made.Key, deploys.Key} {
			require.NotContains(t, r.Body, k[len(made.Prefix):], "never a key's secret")
		}
		all = append(all, handlerstest.DecodeAs[struct {
			APIKeys []apiKeyJSON `json:"api_keys"`
		}](t, r).APIKeys...)
	}
	var names []string
	for _, k := range all {
		names = append(names, k.Name)
		require.Empty(t, k.Key)
	}
	require.Equal(t, []string{"dated", "deploys", "ci", "pipeline", "dashboards"}, names)
	require.Equal(t, "127.0.0.1", all[4].LastUsedIP, "the read key was used, from here")
	require.NotNil(t, all[4].LastUsedAt)

	one := fmt.Sprintf("/api/v1/api-keys/%d", deploys.ID)
	r = b.APICall(t, http.MethodGet, one, read, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, "deploys", handlerstest.DecodeAs[apiKeyJSON](t, r).Name)
	for range 2 { // again changes nothing
		r = b.APICall(t, http.MethodDelete, one, write, "")
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		revoked := handlerstest.DecodeAs[apiKeyJSON](t, r)
		require.Equal(t, "revoked", revoked.Status)
		require.NotNil(t, revoked.RevokedAt)
	}
	handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", "Bearer "+deploys.Key))
	for _, path := range []string{"/api/v1/api-keys/x", "/api/v1/api-keys/999999"} {
		r = b.APICall(t, http.MethodDelete, path, write, "")
		require.Equal(t, http.StatusNotFound, r.Status, path)
	}
	_, page := c.Get("/settings/api-keys")
	require.Contains(t, page, "deploys", "the console lists the API's keys")
	require.Equal(t, 5, countRows(t, b, "SELECT count(*) FROM audit_events WHERE action = 'api_key.create' AND actor_email = $1", email))
	require.Equal(t, 1, countRows(t, b, "SELECT count(*) FROM audit_events WHERE action = 'api_key.revoke' AND actor_email = $1", email))

	// A key revokes itself.
	r = b.APICall(t, http.MethodDelete, fmt.Sprintf("/api/v1/api-keys/%d", b.KeyID(t, write)), write, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", "Bearer "+write))
}

// TestAPIAdminKeysMakeAdminKeys: an admin's admin key makes admin keys;
// their write key does not; a former admin's admin key acts as a write
// key, and makes none either.
func TestAPIAdminKeysMakeAdminKeys(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, email := b.SignedUpAdmin(t, "key-admin")
	adminKey := admin.CreateScopedKey("ops", "admin")
	write := admin.CreateScopedKey("pipeline", "write")

	r := b.APICall(t, http.MethodPost, "/api/v1/api-keys", write, `{"name":"more","scope":"admin"}`)
	require.Equal(t, http.StatusForbidden, r.Status, r.Body)
	r = b.APICall(t, http.MethodPost, "/api/v1/api-keys", adminKey, `{"name":"more","scope":"admin"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	require.Equal(t, "admin", handlerstest.DecodeAs[apiKeyJSON](t, r).Scope)

	_, err := b.Pool.Exec(t.Context(), "UPDATE users SET role = 'user' WHERE id = $1", b.UserID(t, email))
	require.NoError(t, err)
	r = b.APICall(t, http.MethodPost, "/api/v1/api-keys", adminKey, `{"name":"again","scope":"admin"}`)
	require.Equal(t, http.StatusForbidden, r.Status, r.Body)
	r = b.APICall(t, http.MethodPost, "/api/v1/api-keys", adminKey, `{"name":"write","scope":"write"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
}
