package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/apikeys"
	"github.com/kubebyon/kubebyon/audit"
	"github.com/kubebyon/kubebyon/queries"
)

// victim is what one user owns, whose ids another user tries.
type victim struct {
	user   queries.User
	apiKey apikeys.Created
}

// userScopedRoutes lists every route that takes the id of something a user
// owns. Each later feature adds its routes here: requested by another
// signed-in user, every one must answer 404 and change nothing.
var userScopedRoutes = []struct {
	method string
	path   func(v victim) string
	form   url.Values
}{
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/settings/api-keys/%d/revoke", v.apiKey.Key.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/settings/api-keys/%d/revoke", v.apiKey.Key.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/avatars/%d", v.user.ID) }, nil},
	// The admin area is another user's data too, for a non-admin.
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/admin/users/%d", v.user.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/admin/users/%d/disable", v.user.ID) }, url.Values{"password": {"password of attacker"}}},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/admin/users/%d/promote", v.user.ID) }, url.Values{"password": {"password of attacker"}}},
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := queries.New(b.pool)

	_, victimEmail := b.signedUpUser(t, "victim")
	attacker, _ := b.signedUpUser(t, "attacker")
	u, err := q.UserGetByEmail(ctx, victimEmail)
	require.NoError(t, err)
	key, err := (&apikeys.Service{Pool: b.pool}).Create(ctx, u.ID, "victim's key", apikeys.Expiry{Choice: apikeys.ExpiryNever}, audit.Actor{UserID: u.ID, Email: u.Email})
	require.NoError(t, err)
	v := victim{user: u, apiKey: key}

	for _, r := range userScopedRoutes {
		path := r.path(v)
		t.Run(r.method+" "+path, func(t *testing.T) {
			var code int
			if r.method == http.MethodGet {
				code, _ = attacker.get(path)
			} else {
				resp := attacker.post("/", path, r.form)
				code = resp.StatusCode
			}
			require.Equal(t, http.StatusNotFound, code)
		})
	}

	// Nothing the attacker did touched the victim's account or key.
	after, err := q.UserGetByEmail(ctx, victimEmail)
	require.NoError(t, err)
	require.False(t, after.DisabledAt.Valid)
	require.Equal(t, "user", after.Role)
	req, err := http.NewRequest(http.MethodGet, b.server.URL+"/api/v1/me", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key.Value)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
