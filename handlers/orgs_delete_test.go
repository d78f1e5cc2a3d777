package handlers_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestOrgDeleteConsole: only the team's owner is offered, and may use,
// the page that deletes it (403 for its other members, 404 for anyone
// else); it is refused, on that page, while a cluster is left and when
// the name typed is not the organization's. Once deleted, its members'
// keys made in it are 401, and the console of a member who worked in it
// works in their personal organization from the next page.
func TestOrgDeleteConsole(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tm := newOrgTeam(t, b, "delc")
	page, del := fmt.Sprintf("/orgs/%d", tm.orgID), fmt.Sprintf("/orgs/%d/delete", tm.orgID)
	confirm := url.Values{"confirm": {"delc"}}

	for _, role := range teamRoles {
		code, body := tm.clients[role].Get(page)
		if role == "other" {
			require.Equal(t, http.StatusNotFound, code)
			continue
		}
		require.Equal(t, http.StatusOK, code, role)
		require.Equal(t, role == "owner", strings.Contains(body, `data-testid="org-delete"`), role)
	}
	for _, role := range []string{"admin", "member", "viewer", "other"} {
		want := http.StatusForbidden
		if role == "other" {
			want = http.StatusNotFound
		}
		code, _ := tm.clients[role].Get(del)
		require.Equal(t, want, code, "GET as %s", role)
		resp := tm.clients[role].Post("/orgs", del, url.Values{"confirm": {"delc"}})
		require.Equal(t, want, resp.StatusCode, "POST as %s", role)
	}

	owner := tm.clients["owner"]
	code, body := owner.Get(del)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="org-delete-form"`)

	// Its cluster is left: the page says so, and how many.
	resp := owner.Post(del, del, url.Values{"confirm": {"delc"}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusConflict, resp.StatusCode, body)
	require.Contains(t, body, "This organization still has 1 cluster: delete it first.")
	// A name that is not the organization's.
	resp = owner.Post(del, del, url.Values{"confirm": {"delc2"}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, body)
	require.Contains(t, body, "Type the organization&#39;s name exactly as shown to confirm.")
	require.Equal(t, 1, orgCount(t, b, tm.orgID))

	// The cluster is deleted (its row stays, status deleted).
	_, err := b.Pool.Exec(context.Background(), "UPDATE clusters SET status = 'deleted' WHERE id = $1", tm.clusterID)
	require.NoError(t, err)
	for _, role := range []string{"member", "viewer"} {
		require.Equal(t, http.StatusOK, b.APICall(t, http.MethodGet, "/api/v1/clusters", tm.keys[role], "").Status, role)
	}
	resp = owner.Post(del, del, confirm)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, "/orgs", resp.Header.Get("Location"))
	_, body = owner.Get("/orgs")
	require.Contains(t, body, "The organization was deleted.")
	require.NotContains(t, body, fmt.Sprintf(`data-testid="org-%d"`, tm.orgID))
	require.Equal(t, 0, orgCount(t, b, tm.orgID))
	audits := b.AuditDetails(t, "org.delete")
	require.Len(t, audits, 1)
	require.Contains(t, audits[0], `"name": "delc"`)

	// Its members' keys made in it are gone; the outsider's works.
	for _, role := range []string{"owner", "admin", "member", "viewer"} {
		require.Equal(t, http.StatusUnauthorized, b.APICall(t, http.MethodGet, "/api/v1/clusters", tm.keys[role], "").Status, role)
	}
	require.Equal(t, http.StatusOK, b.APICall(t, http.MethodGet, "/api/v1/clusters", tm.keys["other"], "").Status)
	// The member's console worked in it: now in their personal
	// organization; the page of the deleted one is 404.
	member := tm.clients["member"]
	code, body = member.Get("/clusters")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="nav-orgs" title="Switch organization">`+html.EscapeString(personalName(t, b, tm.emails["member"]))+`</a>`)
	require.NotContains(t, body, `title="Switch organization">delc</a>`)
	code, _ = member.Get(page)
	require.Equal(t, http.StatusNotFound, code)
}

// TestOrgDeletePersonal: nobody deletes their personal organization,
// in the console (its page says why, without the form) or the API.
func TestOrgDeletePersonal(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "solo")
	var id int64
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT id FROM organizations WHERE personal_of = $1", b.UserID(t, email)).Scan(&id))
	del := fmt.Sprintf("/orgs/%d/delete", id)

	code, body := c.Get(fmt.Sprintf("/orgs/%d", id))
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, `data-testid="org-delete"`)
	code, body = c.Get(del)
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, body, "A personal organization cannot be deleted: it goes with its account.")
	require.NotContains(t, body, `data-testid="org-delete-form"`)
	resp := c.Post("/orgs", del, url.Values{"confirm": {personalName(t, b, email)}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Contains(t, body, "A personal organization cannot be deleted")

	key := c.CreateScopedKey("solo", "write")
	res := b.APICall(t, http.MethodDelete, fmt.Sprintf("/api/v1/organizations/%d", id), key, "")
	require.Equal(t, http.StatusConflict, res.Status, res.Body)
	require.Equal(t, "personal_organization", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, res).Error.Code)
	require.Equal(t, 1, orgCount(t, b, id))
}

// TestOrgDeleteAPI: DELETE /api/v1/organizations/{id} is the owner's
// (403 for the other members, 404 for anyone else), 409 has_clusters
// while a cluster is left, 204 once none is; the keys made in it are 401
// after.
func TestOrgDeleteAPI(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tm := newOrgTeam(t, b, "dela")
	path := fmt.Sprintf("/api/v1/organizations/%d", tm.orgID)

	for _, role := range []string{"admin", "member", "viewer", "other"} {
		want, code := http.StatusForbidden, "forbidden"
		if role == "other" {
			want, code = http.StatusNotFound, "not_found"
		}
		res := b.APICall(t, http.MethodDelete, path, tm.keys[role], "")
		require.Equal(t, want, res.Status, "%s: %s", role, res.Body)
		require.Equal(t, code, handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, res).Error.Code, role)
	}
	// A read key may not, even the owner's.
	read := tm.clients["owner"].CreateScopedKey("owner-read", "read")
	require.Equal(t, http.StatusForbidden, b.APICall(t, http.MethodDelete, path, read, "").Status)

	res := b.APICall(t, http.MethodDelete, path, tm.keys["owner"], "")
	require.Equal(t, http.StatusConflict, res.Status, res.Body)
	e := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, res).Error
	require.Equal(t, "has_clusters", e.Code)
	require.Equal(t, "This organization still has 1 cluster: delete it first.", e.Message)
	require.Equal(t, 1, orgCount(t, b, tm.orgID))

	// The cluster deleted (its row stays, status deleted).
	_, err := b.Pool.Exec(context.Background(), "UPDATE clusters SET status = 'deleted' WHERE id = $1", tm.clusterID)
	require.NoError(t, err)
	res = b.APICall(t, http.MethodDelete, path, tm.keys["owner"], "")
	require.Equal(t, http.StatusNoContent, res.Status, res.Body)
	require.Equal(t, 0, orgCount(t, b, tm.orgID))
	for _, role := range []string{"owner", "admin", "member", "viewer"} {
		require.Equal(t, http.StatusUnauthorized, b.APICall(t, http.MethodGet, "/api/v1/organizations", tm.keys[role], "").Status, role)
	}
	// The owner's console worked in it: back in their personal one.
	code, body := tm.clients["owner"].Get("/clusters")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `title="Switch organization">`+html.EscapeString(personalName(t, b, tm.emails["owner"]))+`</a>`)
}

// TestOrgViewerKubeconfigToggle: the owner lets the team's viewers
// download a read-only kubeconfig from the organization's page, and
// stops them; the viewer's cluster page follows. Others see the setting,
// and may not change it (admin 403, outsider 404).
func TestOrgViewerKubeconfigToggle(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tm := newOrgTeam(t, b, "vkc")
	b.MarkReady(t, b.Cluster(t, tm.clusterID))
	page, settings := fmt.Sprintf("/orgs/%d", tm.orgID), fmt.Sprintf("/orgs/%d/settings", tm.orgID)
	cluster := fmt.Sprintf("/clusters/%d", tm.clusterID)
	viewerLink := func() bool {
		code, body := tm.clients["viewer"].Get(cluster)
		require.Equal(t, http.StatusOK, code)
		return strings.Contains(body, `data-testid="cluster-kubeconfig"`)
	}
	require.False(t, viewerLink())

	for _, role := range []string{"owner", "admin", "member", "viewer"} {
		_, body := tm.clients[role].Get(page)
		require.Equal(t, role == "owner", strings.Contains(body, `data-testid="org-settings-form"`), role)
		if role != "owner" {
			require.Contains(t, body, `data-state="off"`, role)
		}
	}
	for _, role := range []string{"admin", "member", "viewer", "other"} {
		want := http.StatusForbidden
		if role == "other" {
			want = http.StatusNotFound
		}
		resp := tm.clients[role].Post("/orgs", settings, url.Values{"viewer_kubeconfig": {"on"}})
		require.Equal(t, want, resp.StatusCode, role)
	}
	require.False(t, viewerLink())

	owner := tm.clients["owner"]
	resp := owner.Post(page, settings, url.Values{"viewer_kubeconfig": {"on"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, page, resp.Header.Get("Location"))
	_, body := owner.Get(page)
	require.Contains(t, body, "The organization&#39;s settings were saved.")
	require.Contains(t, body, `name="viewer_kubeconfig" value="on" checked`)
	require.True(t, viewerLink())
	_, body = tm.clients["admin"].Get(page)
	require.Contains(t, body, `data-state="on"`)

	// The box unchecked is not sent: viewers are stopped.
	resp = owner.Post(page, settings, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.False(t, viewerLink())
	require.Len(t, b.AuditDetails(t, "org.update"), 2)
}

// orgCount is 1 while organization id exists, else 0.
func orgCount(t *testing.T, b *handlerstest.Bundle, id int64) int {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM organizations WHERE id = $1", id).Scan(&n))
	return n
}

// personalName is the name of the personal organization of the account
// with email.
func personalName(t *testing.T, b *handlerstest.Bundle, email string) string {
	t.Helper()
	var name string
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		"SELECT o.name FROM organizations o JOIN users u ON u.id = o.personal_of WHERE u.email = $1", email).Scan(&name))
	return name
}

// TestOrgDeleteWithOrders: an order waiting for payment stops the delete
// (409 has_pending_order: cancel it first); once it is cancelled, the
// team, which has orders kept for accounting, is closed rather than
// removed: its members and keys go, its row stays, with its orders, and
// the admins see it closed.
func TestOrgDeleteWithOrders(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	tm := newOrgTeam(t, b, "delo")
	path := fmt.Sprintf("/api/v1/organizations/%d", tm.orgID)
	_, err := b.Pool.Exec(ctx, "UPDATE clusters SET status = 'deleted' WHERE id = $1", tm.clusterID)
	require.NoError(t, err)
	var orderID int64
	require.NoError(t, b.Pool.QueryRow(ctx, `INSERT INTO orders (user_id, org_id, plan_id, period, kind, currency, amount, total, method, status, expires_at)
		SELECT m.user_id, m.org_id, (SELECT id FROM plans WHERE is_default), 'month', 'new', 'USD', 0, 0, 'manual', 'pending', now() + interval '1 day'
		FROM organization_members m WHERE m.org_id = $1 AND m.role = 'owner' RETURNING id`, tm.orgID).Scan(&orderID))

	res := b.APICall(t, http.MethodDelete, path, tm.keys["owner"], "")
	require.Equal(t, http.StatusConflict, res.Status, res.Body)
	e := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, res).Error
	require.Equal(t, "has_pending_order", e.Code)
	require.Contains(t, e.Message, "cancel it")
	require.Equal(t, 1, orgCount(t, b, tm.orgID))

	_, err = b.Pool.Exec(ctx, "UPDATE orders SET status = 'cancelled', closed_at = now() WHERE id = $1", orderID)
	require.NoError(t, err)
	res = b.APICall(t, http.MethodDelete, path, tm.keys["owner"], "")
	require.Equal(t, http.StatusNoContent, res.Status, res.Body)
	var members, orders int
	var closed bool
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT closed_at IS NOT NULL,
		(SELECT count(*) FROM organization_members WHERE org_id = $1), (SELECT count(*) FROM orders WHERE org_id = $1)
		FROM organizations WHERE id = $1`, tm.orgID).Scan(&closed, &members, &orders))
	require.True(t, closed)
	require.Zero(t, members)
	require.Equal(t, 1, orders, "kept for accounting")
	for _, role := range []string{"owner", "admin", "member", "viewer"} {
		require.Equal(t, http.StatusUnauthorized, b.APICall(t, http.MethodGet, "/api/v1/organizations", tm.keys[role], "").Status, role)
		_, body := tm.clients[role].Get("/orgs")
		require.NotContains(t, body, fmt.Sprintf(`data-testid="org-%d"`, tm.orgID), role)
		code, _ := tm.clients[role].Get(fmt.Sprintf("/orgs/%d", tm.orgID))
		require.Equal(t, http.StatusNotFound, code, role)
	}

	admin := newAdminAPI(t, b, "delo-admin")
	code, body := admin.admin.Get(fmt.Sprintf("/admin/organizations/%d", tm.orgID))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-org-closed"`)
	_, body = admin.admin.Get("/admin/organizations")
	require.Contains(t, orgRowOf(t, body, tm.orgID), `data-testid="admin-org-closed"`)
	detail := get[map[string]any](t, admin, fmt.Sprintf("/organizations/%d", tm.orgID))
	require.NotNil(t, detail["closed_at"], "the admin API says it is closed")
	require.EqualValues(t, 0, detail["member_count"])
}
