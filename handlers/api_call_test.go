package handlers_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// apiCallCommand is a page's "view as API call" command.
var apiCallCommand = regexp.MustCompile(`(?s)data-testid="api-call-command">(curl -H &#34;Authorization: Bearer \$KUBEBYON_API_KEY&#34; \\\n  &#39;([^&]+(?:&amp;[^&]+)*)&#39;)</textarea>`)

// TestPagesViewAsAPICall: the console's pages with data show the curl
// command of the API call that reads the same, from the description, and
// that call, made with a key, answers with what the page shows.
func TestPagesViewAsAPICall(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ada, email := b.SignedUpUser(t, "ada")
	key := ada.CreateScopedKey("read", "read")
	id := b.InsertCluster(t, b.UserID(t, email), "seen-both-ways", "seen-both-ways-x1y2z3", "v1.34.0", "nodeport", "ready")
	adaOrg := personalOrg(t, b, b.UserID(t, email))

	for _, tt := range []struct {
		page, call, reference string
		// shows is what the page and the call's answer both hold.
		shows string
	}{
		{"/", "/api/v1/clusters", "#/clusters/listClusters", "seen-both-ways"},
		{"/clusters", "/api/v1/clusters", "#/clusters/listClusters", "seen-both-ways"},
		{fmt.Sprintf("/clusters/%d", id), fmt.Sprintf("/api/v1/clusters/%d", id), "#/clusters/getCluster", "seen-both-ways"},
		{fmt.Sprintf("/clusters/%d/tokens", id), fmt.Sprintf("/api/v1/clusters/%d/join-tokens", id), "#/join-tokens/listJoinTokens", ""},
		{fmt.Sprintf("/clusters/%d/metrics", id), fmt.Sprintf("/api/v1/clusters/%d/metrics?range=1h", id), "#/clusters/getClusterMetrics", ""},
		{"/billing", "/api/v1/billing", "#/billing/getBilling", ""},
		{"/settings/profile", "/api/v1/me", "#/account/getMe", email},
		{"/settings/api-keys", "/api/v1/api-keys", "#/api-keys/listAPIKeys", "read"},
		{"/notifications", "/api/v1/notifications", "#/notifications/listNotifications", ""},
		{"/orgs", "/api/v1/organizations", "#/organizations/listOrganizations", ""},
		{fmt.Sprintf("/orgs/%d", adaOrg), fmt.Sprintf("/api/v1/organizations/%d", adaOrg), "#/organizations/getOrganization", ""},
	} {
		code, body := ada.Get(tt.page)
		require.Equal(t, http.StatusOK, code, tt.page)
		m := apiCallCommand.FindStringSubmatch(body)
		require.NotNil(t, m, "%s shows its API call: %s", tt.page, body)
		require.Equal(t, b.Server.URL+tt.call, html.UnescapeString(m[2]), tt.page)
		require.Contains(t, body, `href="/api/reference`+tt.reference+`"`, tt.page)
		r := b.APICall(t, http.MethodGet, tt.call, key, "")
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", tt.call, r.Body)
		require.True(t, strings.Contains(body, tt.shows) && strings.Contains(r.Body, tt.shows), "%s and %s both show %q", tt.page, tt.call, tt.shows)
	}

	// The admin area's pages show the admin API's calls, for an admin key.
	admin, _ := b.SignedUpAdmin(t, "root")
	adminKey := admin.CreateScopedKey("ops", "admin")
	// ada's personal organization, as admins see it.
	for _, tt := range []struct{ page, call string }{
		{"/admin/users", "/api/v1/admin/users"},
		{"/admin/organizations", "/api/v1/admin/organizations"},
		{fmt.Sprintf("/admin/organizations/%d", adaOrg), fmt.Sprintf("/api/v1/admin/organizations/%d", adaOrg)},
		{"/admin/clusters", "/api/v1/admin/clusters"},
		{fmt.Sprintf("/admin/clusters/%d", id), fmt.Sprintf("/api/v1/admin/clusters/%d", id)},
		{"/admin/orders", "/api/v1/admin/orders"},
		{"/admin/plans", "/api/v1/admin/plans"},
		{"/admin/activity", "/api/v1/admin/activity"},
		{"/admin/jobs", "/api/v1/admin/jobs"},
		{"/admin/settings", "/api/v1/admin/settings"},
		{"/admin/mail", "/api/v1/admin/settings/mail"},
	} {
		code, body := admin.Get(tt.page)
		require.Equal(t, http.StatusOK, code, tt.page)
		m := apiCallCommand.FindStringSubmatch(body)
		require.NotNil(t, m, "%s shows its API call", tt.page)
		require.Equal(t, b.Server.URL+tt.call, html.UnescapeString(m[2]), tt.page)
		r := b.APICall(t, http.MethodGet, tt.call, adminKey, "")
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", tt.call, r.Body)
	}

	// Forms and error pages have none.
	for _, page := range []string{"/clusters/new", "/clusters/999999"} {
		_, body := ada.Get(page)
		require.NotContains(t, body, `data-testid="api-call"`, page)
	}
}
