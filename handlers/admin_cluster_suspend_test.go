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
	"github.com/kubebyon/kubebyon/internal/clusters"
)

// TestAdminClusterSuspendResume: an admin suspends another user's ready
// cluster after typing its slug (a wrong one is a 422 at the field,
// nothing changed) and resumes it; each is audited as the admin's, on the
// timeline, and told to the owner; a second request of either changes
// nothing. While the cluster is suspended its join tokens are refused,
// and its owner sees since when and can no longer change it (settings,
// join tokens, managed ingress, node clean-up) but can still delete it.
func TestAdminClusterSuspendResume(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, adminEmail := b.SignedUpAdmin(t, "suspend-admin")
	owner, email := b.SignedUpUser(t, "suspend-owner")
	ownerID := b.UserID(t, email)
	cl, _ := b.ReadyVirtualCluster(t, owner, "paused")
	token := handlerstest.CreateJoinToken(t, owner, cl, url.Values{"description": {"rack 1"}, "lifetime": {"24h"}, "uses": {"unlimited"}})
	require.Empty(t, joinRefusedCode(t, b, token), "joins are welcome while it is ready")
	path := fmt.Sprintf("/admin/clusters/%d", cl.ID)
	jobs := b.ReconcileJobs(t, cl.ID)
	page := fmt.Sprintf("/clusters/%d", cl.ID)
	// The managed ingress panel offers to switch it on (or says why it
	// cannot be) while the cluster can be changed.
	canSwitchIngress := func() bool {
		_, panel := owner.Get(page + "/ingress")
		return strings.Contains(panel, `data-testid="cluster-ingress-enable"`) || strings.Contains(panel, `data-testid="cluster-ingress-unconfigured"`)
	}
	require.True(t, canSwitchIngress())

	_, body := admin.Get(path)
	require.Contains(t, body, `data-testid="admin-cluster-suspend"`)
	require.NotContains(t, body, `data-testid="admin-cluster-resume"`)
	resp := admin.Post(path, path+"/suspend", url.Values{"suspend_confirm": {"paused"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	body = handlerstest.ReadBody(t, resp)
	require.Contains(t, body, `data-testid="error-suspend_confirm">Type the cluster&#39;s slug exactly as shown.<`)
	require.Contains(t, body, `value="paused"`, "what was typed is kept")
	require.Equal(t, clusters.StatusReady, b.Cluster(t, cl.ID).Status, "nothing changed")
	require.Equal(t, jobs, b.ReconcileJobs(t, cl.ID))

	resp = admin.Post(path, path+"/suspend", url.Values{"suspend_confirm": {" " + cl.Slug + " "}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, path, resp.Header.Get("Location"))
	after := b.Cluster(t, cl.ID)
	require.Equal(t, clusters.StatusSuspended, after.Status)
	require.True(t, after.SuspendedAt.Valid)
	require.Equal(t, b.UserID(t, adminEmail), after.SuspendedBy.Int64)
	require.Equal(t, jobs+1, b.ReconcileJobs(t, cl.ID), "the job that scales the control plane down is queued")
	_, body = admin.Get(path)
	require.Contains(t, body, "The cluster is being suspended; its owner was told.")
	require.Contains(t, body, "An administrator suspended the cluster.")
	require.Contains(t, body, `data-testid="admin-cluster-suspended"`)
	require.Contains(t, body, `data-testid="admin-cluster-resume"`)
	require.NotContains(t, body, `data-testid="admin-cluster-suspend"`)
	var actor, details string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT actor_email, details::text FROM audit_events
		WHERE action = 'admin.cluster_suspend' AND target_type = 'cluster' AND target_id = $1`, fmt.Sprint(cl.ID)).Scan(&actor, &details))
	require.Equal(t, adminEmail, actor)
	require.Contains(t, details, fmt.Sprintf(`"owner_id": %d`, ownerID))
	b.RequireNotified(t, ownerID, "ClusterAdminSuspended")
	require.Contains(t, b.WaitMail(t, email, "An administrator suspended cluster paused").Text, "you can still delete it")

	// Suspended twice: refused, nothing more written.
	resp = admin.Post(path, path+"/suspend", url.Values{"suspend_confirm": {cl.Slug}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.Get(path)
	require.Contains(t, body, "Only a ready cluster can be suspended.")
	require.Equal(t, 1, b.AuditCount(t, "admin.cluster_suspend"))
	require.Equal(t, jobs+1, b.ReconcileJobs(t, cl.ID))

	// Joins are refused, with the reason. A join script started before
	// may still report how it ended, as for a cluster that is not ready.
	script := handlerstest.JoinRefusal(t, b, token, "cluster-suspended")
	require.Contains(t, script, "The cluster is suspended by an administrator: no node can join it until it is resumed.")
	require.Equal(t, http.StatusNoContent, joinEventStatus(t, b, token))

	// The owner sees the suspension, may delete but not change the cluster.
	_, body = owner.Get(page)
	require.Contains(t, body, `data-testid="cluster-suspended"`)
	require.Contains(t, body, "Suspended by an administrator since")
	require.NotContains(t, body, `data-testid="cluster-add-node"`)
	require.False(t, canSwitchIngress())
	suspended := "This cluster is suspended by an administrator: it cannot be changed until it is resumed."
	code, body := owner.Get(page + "/edit")
	require.Equal(t, http.StatusOK, code, "Settings say why, and keep Delete")
	require.Contains(t, body, `data-testid="cluster-settings-suspended"`)
	require.Contains(t, body, suspended, "saying why")
	require.NotContains(t, body, `data-testid="cluster-form"`)
	require.NotContains(t, body, `data-testid="stale-cleanup-form"`)
	require.Contains(t, body, `data-testid="cluster-delete"`)
	resp = owner.Post(page, page+"/edit", url.Values{"description": {"changed"}, "kubernetes_version": {"v1.34.0"}, "public_access_mode": {"nodeport"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), suspended)
	resp = owner.Post(page, page+"/tokens", url.Values{"description": {"rack 2"}, "lifetime": {"24h"}, "uses": {"unlimited"}})
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), suspended)
	for _, r := range []struct {
		path string
		form url.Values
	}{
		{page + "/ingress", url.Values{"enabled": {"on"}}},
		{page + "/ingress/hostnames", url.Values{"name": {"shop.example.com"}}},
		{page + "/stale-node-cleanup", url.Values{"hours": {"2"}}},
	} {
		resp = owner.Post(page, r.path, r.form)
		require.Equal(t, http.StatusConflict, resp.StatusCode, r.path)
		require.Contains(t, handlerstest.ReadBody(t, resp), suspended, r.path)
	}
	require.Equal(t, after.Generation, b.Cluster(t, cl.ID).Generation, "nothing changed")
	var tokens int
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT count(*) FROM join_tokens WHERE cluster_id = $1", cl.ID).Scan(&tokens))
	require.Equal(t, 1, tokens)

	// Resumed: audited, told, and resumed twice refused.
	resp = admin.Post(path, path+"/resume", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, path, resp.Header.Get("Location"))
	require.Equal(t, clusters.StatusResuming, b.Cluster(t, cl.ID).Status)
	require.Equal(t, jobs+2, b.ReconcileJobs(t, cl.ID), "the job that scales the control plane back is queued")
	_, body = admin.Get(path)
	require.Contains(t, body, "The cluster is resuming; its owner was told.")
	require.Contains(t, body, "An administrator resumed the cluster.")
	require.NotContains(t, body, `data-testid="admin-cluster-resume"`)
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT actor_email FROM audit_events
		WHERE action = 'admin.cluster_resume' AND target_id = $1`, fmt.Sprint(cl.ID)).Scan(&actor))
	require.Equal(t, adminEmail, actor)
	b.RequireNotified(t, ownerID, "ClusterAdminResumed")
	b.WaitMail(t, email, "An administrator resumed cluster paused")
	resp = admin.Post(path, path+"/resume", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.Get(path)
	require.Contains(t, body, "Only a suspended cluster can be resumed.")
	require.Equal(t, 1, b.AuditCount(t, "admin.cluster_resume"))

	// Until its control plane answers, joins are still refused.
	handlerstest.JoinRefusal(t, b, token, "cluster-suspended")
	_, body = owner.Get(page)
	require.NotContains(t, body, `data-testid="cluster-suspended"`)
	require.Contains(t, body, "Resuming")
	b.MarkReady(t, b.Cluster(t, cl.ID))
	require.Empty(t, joinRefusedCode(t, b, token), "ready again: joins are welcome")
}

// joinRefusedCode is why GET /join/<token> refuses the token, "" when it
// does not.
func joinRefusedCode(t *testing.T, b *handlerstest.Bundle, token string) string {
	t.Helper()
	resp, err := http.Get(b.Server.URL + "/join/" + token)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return resp.Header.Get("X-KubeBYON-Join-Refused")
}

// joinEventStatus is the status with which the platform answers a report
// of the join script.
func joinEventStatus(t *testing.T, b *handlerstest.Bundle, token string) int {
	t.Helper()
	resp, err := http.PostForm(b.Server.URL+"/join/"+token+"/events", url.Values{"step": {"preflight"}, "status": {"ok"}})
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode
}
