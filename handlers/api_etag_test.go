package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestAPIPatchRoutesAreConditional: every PATCH route of the API answers
// the ETag of what it changes, on GET and on PATCH. A PATCH made over the
// state it read changes it; one made over a state that changed since is
// 412 precondition_failed and changes nothing; without If-Match a PATCH
// is made whatever the state. A PATCH route missing from the table fails
// the test.
func TestAPIPatchRoutesAreConditional(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	user, email := b.SignedUpUser(t, "owner")
	userKey := user.CreateKey("pipeline")
	admin, _ := b.SignedUpAdmin(t, "boss")
	adminKey := admin.CreateScopedKey("ops", "admin")
	clusterID := b.InsertCluster(t, b.UserID(t, email), "etags", "etags-abc123", "v1.34.0", "nodeport", "ready")
	plans := adminPages[adminPlanJSON](t, b, adminKey, "/api/v1/admin/plans", "plans", nil)
	require.NotEmpty(t, plans)
	orgID := personalOrg(t, b, b.UserID(t, email))
	_, mateEmail := b.SignedUpUser(t, "teammate")
	mateID := b.UserID(t, mateEmail)
	addOrgMember(t, b, orgID, mateID, "member")

	// Each route with a path to it, a key, and two changes: the first is
	// made, the second is sent over the state before the first.
	cases := map[string]struct {
		path, key     string
		first, second string
	}{
		"/api/v1/clusters/:id": {fmt.Sprintf("/api/v1/clusters/%d", clusterID), userKey,
			`{"description": "first"}`, `{"description": "second"}`},
		"/api/v1/me": {"/api/v1/me", userKey, `{"name": "First Name"}`, `{"name": "Second Name"}`},
		"/api/v1/notification-settings": {"/api/v1/notification-settings", userKey,
			`{"cluster_failed": {"email": false}}`, `{"cluster_ready": {"in_app": false}}`},
		"/api/v1/organizations/:id": {fmt.Sprintf("/api/v1/organizations/%d", orgID), userKey,
			`{"name": "First team"}`, `{"viewer_kubeconfig": true}`},
		"/api/v1/organizations/:id/members/:user_id": {fmt.Sprintf("/api/v1/organizations/%d/members/%d", orgID, mateID), userKey,
			`{"role": "viewer"}`, `{"role": "admin"}`},
		"/api/v1/admin/plans/:id": {fmt.Sprintf("/api/v1/admin/plans/%d", plans[0].ID), adminKey,
			`{"description_en": "first"}`, `{"description_en": "second"}`},
		"/api/v1/admin/settings": {"/api/v1/admin/settings", adminKey,
			`{"default_access_mode": "loadbalancer"}`, `{"default_access_mode": "nodeport"}`},
		"/api/v1/admin/settings/sign-up": {"/api/v1/admin/settings/sign-up", adminKey,
			`{"policy": "invite_only"}`, `{"policy": "closed"}`},
		"/api/v1/admin/settings/sign-in": {"/api/v1/admin/settings/sign-in", adminKey,
			`{"github": {"client_id": "first", "client_secret": "first secret"}}`, `{"github": {"client_id": "second"}}`},
		"/api/v1/admin/settings/branding": {"/api/v1/admin/settings/branding", adminKey,
			`{"product_name": "First Cloud"}`, `{"product_name": "Second Cloud"}`},
		"/api/v1/admin/settings/mail": {"/api/v1/admin/settings/mail", adminKey,
			`{"host": "smtp.mail.test", "port": 587, "from": "First <first@mail.test>"}`, `{"from": "Second <second@mail.test>"}`},
		"/api/v1/admin/settings/webhook-network": {"/api/v1/admin/settings/webhook-network", adminKey,
			`{"allowed_cidrs": ["10.1.0.0/16"]}`, `{"allowed_cidrs": ["10.2.0.0/16"]}`},
		"/api/v1/admin/settings/billing": {"/api/v1/admin/settings/billing", adminKey,
			`{"grace_days": 5}`, `{"grace_days": 6}`},
		"/api/v1/admin/settings/metrics": {"/api/v1/admin/settings/metrics", adminKey,
			`{"interval_seconds": 30}`, `{"interval_seconds": 45}`},
		"/api/v1/admin/settings/two-factor": {"/api/v1/admin/settings/two-factor", adminKey,
			`{"require": "admins"}`, `{"require": "all"}`},
	}
	seen := 0
	for _, r := range b.Echo.Routes() {
		if r.Method != http.MethodPatch || !strings.HasPrefix(r.Path, "/api/") {
			continue
		}
		seen++
		tc, ok := cases[r.Path]
		require.True(t, ok, "PATCH %s is not in the table: show that it refuses lost updates", r.Path)
		t.Run(r.Path, func(t *testing.T) {
			get := func() handlerstest.APIResponse {
				t.Helper()
				g := b.APICall(t, http.MethodGet, tc.path, tc.key, "")
				require.Equal(t, http.StatusOK, g.Status, g.Body)
				require.Regexp(t, `^"[0-9a-f]{32}"$`, g.Header.Get("ETag"), "a strong ETag")
				return g
			}
			patch := func(ifMatch, body string) handlerstest.APIResponse {
				t.Helper()
				h := http.Header{}
				if ifMatch != "" {
					h.Set("If-Match", ifMatch)
				}
				return apiCallWith(t, b, http.MethodPatch, tc.path, tc.key, body, h)
			}

			read := get()
			require.Equal(t, read.Header.Get("ETag"), get().Header.Get("ETag"), "nothing changed, the same ETag")

			made := patch(read.Header.Get("ETag"), tc.first)
			require.Equal(t, http.StatusOK, made.Status, made.Body)
			now := get()
			require.NotEqual(t, read.Header.Get("ETag"), made.Header.Get("ETag"), "the change changed the ETag")
			require.Equal(t, now.Header.Get("ETag"), made.Header.Get("ETag"), "the PATCH answers the ETag a GET gives")

			refused := patch(read.Header.Get("ETag"), tc.second)
			require.Equal(t, http.StatusPreconditionFailed, refused.Status, refused.Body)
			e := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, refused)
			require.Equal(t, "precondition_failed", e.Error.Code)
			after := get()
			require.Equal(t, now.Body, after.Body, "the refused PATCH changed nothing")
			require.Equal(t, now.Header.Get("ETag"), after.Header.Get("ETag"))

			weak := patch("W/"+now.Header.Get("ETag"), tc.second)
			require.Equal(t, http.StatusPreconditionFailed, weak.Status, "a weak tag never matches: %s", weak.Body)
			made = patch("", tc.second)
			require.Equal(t, http.StatusOK, made.Status, made.Body)
			require.NotEqual(t, now.Header.Get("ETag"), made.Header.Get("ETag"))
		})
	}
	require.Equal(t, len(cases), seen, "every route of the table is a PATCH route")
}
