package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestAdminAPINeedsAdminKey: every route of the admin API, whatever it
// does, is 403 insufficient_scope for any key but an admin key of a user
// who is still an admin, and 401 without a key; nothing behind it runs.
func TestAdminAPINeedsAdminKey(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	user, _ := b.SignedUpUser(t, "plain")
	admin, _ := b.SignedUpAdmin(t, "boss")
	demoted, demotedEmail := b.SignedUpAdmin(t, "former")
	keys := map[string]string{
		"a user's write key":   user.CreateKey("user write"),
		"an admin's write key": admin.CreateKey("admin write"),
		"an admin's read key":  admin.CreateScopedKey("admin read", "read"),
		"a former admin's key": demoted.CreateScopedKey("former admin", "admin"),
	}
	_, err := b.Pool.Exec(context.Background(), "UPDATE users SET role = 'user' WHERE email = $1", demotedEmail)
	require.NoError(t, err)

	for _, r := range b.Echo.Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/admin/") || strings.HasPrefix(r.Method, "echo_route_") {
			continue
		}
		path := echoParam.ReplaceAllString(r.Path, "1")
		body := ""
		if r.Method == http.MethodPost || r.Method == http.MethodPatch || r.Method == http.MethodPut {
			body = "{}"
		}
		t.Run(r.Method+" "+r.Path, func(t *testing.T) {
			for who, key := range keys {
				resp := b.APICall(t, r.Method, path, key, body)
				require.Equal(t, http.StatusForbidden, resp.Status, who)
				require.Contains(t, resp.Body, `"code":"insufficient_scope"`, who)
				require.Equal(t, `Bearer error="insufficient_scope", scope="admin"`, resp.Header.Get("WWW-Authenticate"), who)
			}
			// Without a key: 401, or 429 once this address has failed
			// too often (the routes are many; requireAPIKey counts).
			require.Contains(t, []int{http.StatusUnauthorized, http.StatusTooManyRequests}, b.APICall(t, r.Method, path, "", body).Status)
		})
	}
}
