package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestAdminUserDetail: an account's admin page shows its clusters, API keys
// (not their secrets), sessions and sign-in methods, and no one else's;
// the admin revokes a key, ends every session, mails a password reset and
// deletes the account, each audited; deleting is refused with a cluster,
// with a wrong email or password, and on oneself; non-admins get 404.
func TestAdminUserDetail(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, adminEmail := b.SignedUpAdmin(t, "detail-boss")
	adminID := b.UserID(t, adminEmail)
	const adminPassword = "password of detail-boss"
	user, userEmail := b.SignedUpUser(t, "detail-user")
	userID := b.UserID(t, userEmail)
	other, otherEmail := b.SignedUpUser(t, "detail-other")
	otherID := b.UserID(t, otherEmail)
	page := fmt.Sprintf("/admin/users/%d", userID)

	userKey := user.CreateKey("user key")
	userKeyID := b.KeyID(t, userKey)
	otherKey := other.CreateKey("other key")
	clusterID := b.InsertCluster(t, userID, "user-cluster", "user-cluster-"+strconv.FormatInt(userID, 10), "v1.34.0", "nodeport", "ready")
	b.InsertCluster(t, userID, "gone-cluster", "gone-cluster-"+strconv.FormatInt(userID, 10), "v1.34.0", "nodeport", "deleted")
	b.InsertCluster(t, otherID, "other-cluster", "other-cluster-"+strconv.FormatInt(otherID, 10), "v1.34.0", "nodeport", "ready")
	_, err := b.Pool.Exec(ctx, `INSERT INTO oauth_identities (user_id, provider, subject, email) VALUES ($1, 'github', 'detail-1', $2)`, userID, userEmail)
	require.NoError(t, err)

	audited := func(action string) []string {
		t.Helper()
		rows, err := b.Pool.Query(ctx, `SELECT coalesce(details::text, '') FROM audit_events
			WHERE actor_id = $1 AND action = $2 ORDER BY id`, adminID, action)
		require.NoError(t, err)
		defer rows.Close()
		var got []string
		for rows.Next() {
			var d string
			require.NoError(t, rows.Scan(&d))
			got = append(got, d)
		}
		require.NoError(t, rows.Err())
		return got
	}

	t.Run("the page shows the user's own", func(t *testing.T) {
		code, body := admin.Get(page)
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, fmt.Sprintf(`href="/admin/clusters/%d">user-cluster</a>`, clusterID))
		require.Equal(t, 1, strings.Count(body, `data-testid="admin-user-cluster-row"`))
		require.NotContains(t, body, "gone-cluster")
		require.NotContains(t, body, "other-cluster")
		require.Contains(t, body, "user key")
		require.NotContains(t, body, "other key")
		require.NotContains(t, body, userKey)
		require.NotContains(t, body, userKey[12:], "no part of the secret")
		require.Equal(t, 1, strings.Count(body, `data-testid="admin-api-key-revoke"`))
		require.Equal(t, 1, strings.Count(body, `data-testid="admin-session-row"`))
		require.Contains(t, body, `data-testid="admin-form-sessions_revoke"`)
		require.Regexp(t, `data-testid="admin-user-password">\s*Set`, body)
		require.Contains(t, body, `data-testid="admin-user-identity">github`)
		require.Contains(t, body, `data-testid="admin-user-delete-blocked"`)
		require.Regexp(t, `<button type="submit" class="admin-danger" disabled data-testid="admin-delete"`, body)

		_, body = admin.Get(fmt.Sprintf("/admin/users/%d", otherID))
		require.NotContains(t, body, ">user-cluster<")
		require.Contains(t, body, ">other-cluster<")
		require.NotContains(t, body, "user key")
		require.NotContains(t, body, `data-testid="admin-user-identity"`)
	})

	t.Run("non-admins get 404", func(t *testing.T) {
		for _, path := range []string{
			page + "/sessions_revoke", page + "/password-reset", page + "/delete",
			fmt.Sprintf("%s/api-keys/%d/revoke", page, userKeyID),
		} {
			resp := other.Post("/", path, url.Values{"password": {"password of detail-other"}, "email": {userEmail}})
			require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		}
		handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+userKey), userEmail)
	})

	t.Run("revoke a key", func(t *testing.T) {
		resp := admin.Post(page, fmt.Sprintf("%s/api-keys/%d/revoke", page, userKeyID), nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
		_, body := admin.Get(page)
		require.Contains(t, body, "The API key is revoked.")
		require.Zero(t, strings.Count(body, `data-testid="admin-api-key-revoke"`))
		handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", "Bearer "+userKey))
		handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+otherKey), otherEmail)
		var n int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events
			WHERE actor_id = $1 AND action = 'api_key.revoke' AND target_id = $2`, adminID, strconv.FormatInt(userKeyID, 10)).Scan(&n))
		require.Equal(t, 1, n)
		// Another user's key through this account's page is not found.
		otherKeyID := b.KeyID(t, otherKey)
		resp = admin.Post(page, fmt.Sprintf("%s/api-keys/%d/revoke", page, otherKeyID), nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	t.Run("revoke all sessions", func(t *testing.T) {
		resp := admin.Post(page, page+"/sessions_revoke", url.Values{"password": {"wrong"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-password-sessions_revoke"`)
		code, body := user.Get("/")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `data-testid="dashboard-greeting"`, "still signed in")

		resp = admin.Post(page, page+"/sessions_revoke", url.Values{"password": {adminPassword}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
		_, body = admin.Get(page)
		require.Contains(t, body, "The user is signed out everywhere.")
		_, body = user.Get("/")
		require.NotContains(t, body, `data-testid="dashboard-greeting"`, "signed out")
		require.Equal(t, []string{`{"email": "` + userEmail + `", "sessions_ended": 1}`}, audited("admin.user_sessions_revoke"))
	})

	t.Run("reset password", func(t *testing.T) {
		resp := admin.Post(page, page+"/password-reset", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
		_, body := admin.Get(page)
		require.Contains(t, body, "A password reset was mailed to the user.")
		b.DeliverMail(t, userEmail)
		require.Eventually(t, func() bool {
			for _, m := range b.Mail.Messages(t, userEmail) {
				if strings.HasPrefix(m.Subject, "Reset your KubeBYON password") {
					return true
				}
			}
			return false
		}, 20*time.Second, 100*time.Millisecond)
		require.Equal(t, []string{`{"email": "` + userEmail + `"}`}, audited("admin.user_password_reset"))
	})

	t.Run("delete", func(t *testing.T) {
		// Refused while a cluster is left.
		resp := admin.Post(page, page+"/delete", url.Values{"email": {userEmail}, "password": {adminPassword}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), "The account still has clusters")

		_, err := b.Pool.Exec(ctx, "UPDATE clusters SET status = 'deleted' WHERE id = $1", clusterID)
		require.NoError(t, err)

		resp = admin.Post(page, page+"/delete", url.Values{"email": {"wrong@example.com"}, "password": {adminPassword}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		body := handlerstest.ReadBody(t, resp)
		require.Contains(t, body, `data-testid="error-email-delete">This is not the account&#39;s email.`)
		require.Contains(t, body, `value="wrong@example.com"`)

		resp = admin.Post(page, page+"/delete", url.Values{"email": {userEmail}, "password": {"wrong"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-password-delete"`)
		require.Empty(t, audited("admin.user_delete"), "nothing for refused attempts")

		resp = admin.Post(page, page+"/delete", url.Values{"email": {userEmail}, "password": {adminPassword}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
		require.Equal(t, "/admin/users", resp.Header.Get("Location"))
		_, body = admin.Get("/admin/users")
		require.Contains(t, body, "The account is deleted.")
		code, _ := admin.Get(page)
		require.Equal(t, http.StatusNotFound, code)
		require.Equal(t, []string{`{"email": "` + userEmail + `", "deleted_clusters_removed": 2}`}, audited("admin.user_delete"))

		resp = user.Post("/login", "/login", url.Values{"email": {userEmail}, "password": {"password of detail-user"}})
		require.NotEqual(t, http.StatusSeeOther, resp.StatusCode, "cannot sign in")
		var n int
		require.NoError(t, b.Pool.QueryRow(ctx, "SELECT count(*) FROM api_keys WHERE user_id = $1", userID).Scan(&n))
		require.Zero(t, n)
		// The other account is untouched.
		handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+otherKey), otherEmail)
	})

	t.Run("not oneself", func(t *testing.T) {
		self := fmt.Sprintf("/admin/users/%d", adminID)
		_, body := admin.Get(self)
		require.NotContains(t, body, `data-testid="admin-form-delete"`)
		resp := admin.Post(self, self+"/delete", url.Values{"email": {adminEmail}, "password": {adminPassword}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), "You cannot delete your own account here.")
		code, _ := admin.Get("/admin/users")
		require.Equal(t, http.StatusOK, code, "the last admin is still there")
	})
}
