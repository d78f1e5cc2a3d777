package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/clusters"
)

// adminClusterIDs are the ids of the rows of an admin cluster list, in
// the order shown.
func adminClusterIDs(t *testing.T, body string) []string {
	t.Helper()
	var ids []string
	for _, m := range regexp.MustCompile(`data-testid="admin-cluster-row" data-cluster-id="(\d+)"`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// TestAdminClusterList: every user's clusters, deleted ones only under
// their filter; each filter and the search narrow the list; pages of
// AdminPageSize go older and newer by id; a non-admin gets 404.
func TestAdminClusterList(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, _ := b.SignedUpAdmin(t, "clusters-list-admin")
	user, aliceEmail := b.SignedUpUser(t, "clusters-list-alice")
	_, bobEmail := b.SignedUpUser(t, "clusters-list-bob")
	alice, bob := b.UserID(t, aliceEmail), b.UserID(t, bobEmail)

	web := b.InsertCluster(t, alice, "web", "web-a1b2c3", "v1.34.0", "nodeport", "ready")
	db := b.InsertCluster(t, bob, "db", "db-d4e5f6", "v1.33.4", "loadbalancer", "failed")
	gone := b.InsertCluster(t, bob, "gone", "gone-g7h8i9", "v1.34.0", "nodeport", "deleted")
	_, err := b.Pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready, conditions, addresses)
		VALUES ($1, 'n1', true, '[]', '[]'), ($1, 'n2', false, '[]', '[]')`, web)
	require.NoError(t, err)
	id := func(n int64) string { return fmt.Sprint(n) }

	code, body := admin.Get("/admin/clusters")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-nav-clusters" aria-current="page"`)
	require.Equal(t, []string{id(db), id(web)}, adminClusterIDs(t, body), "newest first, the deleted one left out")
	row := body[strings.Index(body, `data-cluster-id="`+id(web)+`"`):]
	row = row[:strings.Index(row, "</tr>")]
	require.Contains(t, row, fmt.Sprintf(`href="/admin/clusters/%d"`, web))
	require.Contains(t, row, "<code>web-a1b2c3</code>")
	require.Contains(t, row, fmt.Sprintf(`<a href="/admin/users/%d">%s</a>`, alice, aliceEmail))
	require.Contains(t, row, `data-status="ready"`)
	require.Contains(t, row, "<td>v1.34.0</td>")
	require.Contains(t, row, "<td>NodePort</td>")
	require.Contains(t, row, "<td>2</td>", "two nodes")
	require.Contains(t, row, "<time datetime=")

	for _, c := range []struct {
		name, query string
		want        []string
	}{
		{"status", "status=failed", []string{id(db)}},
		{"deleted", "status=deleted", []string{id(gone)}},
		{"owner", "owner=" + url.QueryEscape(strings.ToUpper(bobEmail)), []string{id(db)}},
		{"deleted of owner", "status=deleted&owner=" + url.QueryEscape(bobEmail), []string{id(gone)}},
		{"version", "version=v1.34.0", []string{id(web)}},
		{"access", "access=loadbalancer", []string{id(db)}},
		{"search name", "q=WE", []string{id(web)}},
		{"search slug", "q=d4e5", []string{id(db)}},
		{"search literal", "q=%25", nil},
		{"combined", "access=nodeport&q=web&owner=" + url.QueryEscape(aliceEmail), []string{id(web)}},
		{"no match", "owner=nobody%40example.com", nil},
	} {
		code, body := admin.Get("/admin/clusters?" + c.query)
		require.Equal(t, http.StatusOK, code, c.name)
		require.Equal(t, c.want, adminClusterIDs(t, body), c.name)
		if c.want == nil {
			require.Contains(t, body, `data-testid="admin-clusters-empty"`, c.name)
		}
	}
	_, body = admin.Get("/admin/clusters?status=failed&access=loadbalancer&q=db")
	require.Contains(t, body, `<option value="failed" selected>`, "the filters are kept in the form")
	require.Contains(t, body, `<option value="loadbalancer" selected>`)
	require.Contains(t, body, `name="q" value="db"`)

	// 51 more of alice's clusters: the first page ends one before them all.
	_, err = b.Pool.Exec(ctx, `INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		SELECT $1, 'many-' || i, 'many-' || i || '-x', 'v1.34.0', 'nodeport', 'ready' FROM generate_series(1, 51) i`, alice)
	require.NoError(t, err)
	_, body = admin.Get("/admin/clusters?version=v1.34.0")
	first := adminClusterIDs(t, body)
	require.Len(t, first, clusters.AdminPageSize)
	require.NotContains(t, body, `data-testid="admin-clusters-newer"`, "the first page has no newer one")
	older := handlerstest.LinkOf(t, body, "admin-clusters-older")
	require.Equal(t, "/admin/clusters?before="+first[len(first)-1]+"&version=v1.34.0", older, "the filter goes along")
	_, body = admin.Get(older)
	second := adminClusterIDs(t, body)
	require.Len(t, second, 2, "51 + web = 52 clusters of v1.34.0")
	require.Equal(t, id(web), second[1])
	require.NotContains(t, body, `data-testid="admin-clusters-older"`, "the last page has no older one")
	newer := handlerstest.LinkOf(t, body, "admin-clusters-newer")
	_, body = admin.Get(newer)
	require.Equal(t, first, adminClusterIDs(t, body), "newer goes back to the first page")
	require.Contains(t, body, `data-testid="admin-clusters-older"`)
	require.NotContains(t, body, `data-testid="admin-clusters-newer"`, "nothing is newer than the newest")

	code, _ = user.Get("/admin/clusters")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = user.Get(fmt.Sprintf("/admin/clusters/%d", web))
	require.Equal(t, http.StatusNotFound, code)
}

// TestAdminClusterPage: any user's cluster with its events, nodes and
// join tokens, never a token's secret nor its hash.
func TestAdminClusterPage(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, _ := b.SignedUpAdmin(t, "cluster-page-admin")
	_, email := b.SignedUpUser(t, "cluster-page-owner")
	cl := b.InsertCluster(t, b.UserID(t, email), "shop", "shop-q1w2e3", "v1.34.0", "nodeport", "ready")
	b.Event(t, cl, "info", "Installing", "")
	b.Event(t, cl, "info", "Ready", "")
	_, err := b.Pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready, conditions, kubelet_version)
		VALUES ($1, 'worker-1', true, '[{"type":"Ready","status":"True"}]', 'v1.34.0'),
		       ($1, 'worker-2', false, '[{"type":"Ready","status":"False"}]', 'v1.33.4')`, cl)
	require.NoError(t, err)
	sealed := b.Box.Seal([]byte("q1w2e3.0123456789abcdef"))
	_, err = b.Pool.Exec(ctx, `WITH t AS (INSERT INTO join_tokens (cluster_id, token_id, token_hash, sealed_token, description, revoked_at)
		VALUES ($1, 'q1w2e3', 'hash-of-the-secret-token', $2, 'rack 7', now()) RETURNING id)
		INSERT INTO join_token_nodes (token_id, node_name, csr_name) SELECT id, 'worker-1', 'csr-1' FROM t`, cl, sealed)
	require.NoError(t, err)

	code, body := admin.Get(fmt.Sprintf("/admin/clusters/%d", cl))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-nav-clusters" aria-current="page"`)
	require.Contains(t, body, `data-testid="admin-cluster-owner">`+email+`<`)
	require.Contains(t, body, `data-testid="admin-cluster-slug">shop-q1w2e3<`)
	events := body[strings.Index(body, `data-testid="admin-cluster-events"`):]
	require.Equal(t, 2, strings.Count(events, `data-testid="cluster-event"`))
	require.Contains(t, events, "Installing the control plane.")
	require.Contains(t, events, "The cluster is ready.")
	nodes := body[strings.Index(body, `data-testid="admin-cluster-nodes"`):strings.Index(body, `data-testid="admin-cluster-tokens"`)]
	require.Equal(t, 2, strings.Count(nodes, `data-testid="admin-cluster-node"`))
	require.Contains(t, nodes, "<td>worker-1</td>")
	require.Contains(t, nodes, `data-status="NotReady"`)
	require.Contains(t, nodes, "<td>v1.33.4</td>")
	tokens := body[strings.Index(body, `data-testid="admin-cluster-tokens"`):]
	require.Equal(t, 1, strings.Count(tokens, `data-testid="admin-cluster-token"`))
	require.Contains(t, tokens, "<td>rack 7</td>")
	require.Contains(t, tokens, "<code>q1w2e3</code>")
	require.Equal(t, 3, strings.Count(tokens[:strings.Index(tokens, "</tr></tbody>")], "<time datetime="), "created, last used and revoked; no expiry")
	require.NotContains(t, body, sealed, "never the sealed token")
	require.NotContains(t, body, "hash-of-the-secret-token", "never the token's hash")
	require.NotContains(t, body, "0123456789abcdef", "never the secret")
	require.NotContains(t, body, `data-testid="admin-cluster-retry"`, "only a failed cluster is retried")
	require.Contains(t, body, `data-testid="admin-cluster-delete"`)

	code, _ = admin.Get("/admin/clusters/999999")
	require.Equal(t, http.StatusNotFound, code)
}

// TestAdminClusterRetry: an admin retries another user's failed cluster
// as its owner would; it is audited as the admin's, and the owner told.
func TestAdminClusterRetry(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, adminEmail := b.SignedUpAdmin(t, "cluster-retry-admin")
	_, email := b.SignedUpUser(t, "cluster-retry-owner")
	owner := b.UserID(t, email)
	cl := b.InsertCluster(t, owner, "flaky", "flaky-r4t5y6", "v1.34.0", "nodeport", "ready")
	path := fmt.Sprintf("/admin/clusters/%d", cl)

	resp := admin.Post(path, path+"/retry", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body := admin.Get(path)
	require.Contains(t, body, "Only a failed cluster can be retried.")
	require.Equal(t, "ready", b.Cluster(t, cl).Status)
	require.Zero(t, b.ReconcileJobs(t, cl))

	_, err := b.Pool.Exec(ctx, `UPDATE clusters SET status = 'failed', status_message = 'helm install: timed out' WHERE id = $1`, cl)
	require.NoError(t, err)
	_, body = admin.Get(path)
	require.Contains(t, body, `data-testid="admin-cluster-status-message">helm install: timed out<`)
	require.Contains(t, body, `data-testid="admin-cluster-retry"`)
	resp = admin.Post(path, path+"/retry", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, path, resp.Header.Get("Location"))
	after := b.Cluster(t, cl)
	require.Equal(t, "pending", after.Status)
	require.Empty(t, after.StatusMessage)
	require.Equal(t, 1, b.ReconcileJobs(t, cl), "a reconcile is queued")
	_, body = admin.Get(path)
	require.Contains(t, body, "The cluster will be set up again; its owner was told.")
	require.Contains(t, body, "An administrator asked for a retry.")

	var actor, details string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT actor_email, details::text FROM audit_events
		WHERE action = 'admin.cluster_retry' AND target_type = 'cluster' AND target_id = $1`, fmt.Sprint(cl)).Scan(&actor, &details))
	require.Equal(t, adminEmail, actor)
	require.Contains(t, details, fmt.Sprintf(`"owner_id": %d`, owner))
	require.Contains(t, details, fmt.Sprintf(`"owner_email": "%s"`, email))
	b.RequireNotified(t, owner, "ClusterAdminRetried")
	require.Contains(t, b.WaitMail(t, email, "An administrator retried cluster flaky").Text, fmt.Sprintf("/clusters/%d", cl))
}

// TestAdminClusterDelete: an admin deletes another user's cluster after
// typing its slug (a wrong one is a 422 at the field, nothing changed),
// in a state its owner could not change it in too; audited, owner told.
func TestAdminClusterDelete(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, adminEmail := b.SignedUpAdmin(t, "cluster-delete-admin")
	_, email := b.SignedUpUser(t, "cluster-delete-owner")
	owner := b.UserID(t, email)
	cl := b.InsertCluster(t, owner, "doomed", "doomed-u7i8o9", "v1.34.0", "nodeport", "provisioning")
	path := fmt.Sprintf("/admin/clusters/%d", cl)

	resp := admin.Post(path, path+"/delete", url.Values{"confirm": {"doomed"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	body := handlerstest.ReadBody(t, resp)
	require.Contains(t, body, `data-testid="error-confirm">Type the cluster&#39;s slug exactly as shown.<`)
	require.Contains(t, body, `value="doomed"`, "what was typed is kept")
	require.Equal(t, "provisioning", b.Cluster(t, cl).Status, "nothing changed")
	require.Zero(t, b.ReconcileJobs(t, cl))

	resp = admin.Post(path, path+"/delete", url.Values{"confirm": {" doomed-u7i8o9 "}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, path, resp.Header.Get("Location"))
	after := b.Cluster(t, cl)
	require.Equal(t, "deleting", after.Status)
	require.True(t, after.DeleteRequestedAt.Valid)
	require.Equal(t, 1, b.ReconcileJobs(t, cl), "the delete job is queued")
	_, body = admin.Get(path)
	require.Contains(t, body, "The cluster is being deleted; its owner was told.")
	require.Contains(t, body, "An administrator asked for the cluster&#39;s deletion.")

	var actor, details string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT actor_email, details::text FROM audit_events
		WHERE action = 'admin.cluster_delete' AND target_id = $1`, fmt.Sprint(cl)).Scan(&actor, &details))
	require.Equal(t, adminEmail, actor)
	require.Contains(t, details, fmt.Sprintf(`"owner_id": %d`, owner))
	b.RequireNotified(t, owner, "ClusterAdminDeleted")
	require.Contains(t, b.WaitMail(t, email, "An administrator deleted cluster doomed").Text, "being removed")

	// Forced again while it is being deleted: a fresh reconcile.
	resp = admin.Post(path, path+"/delete", url.Values{"confirm": {"doomed-u7i8o9"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, 1, b.ReconcileJobs(t, cl), "the waiting job is superseded by the new one")
	require.Equal(t, "deleting", b.Cluster(t, cl).Status)

	// Deleted: nothing is left to delete.
	_, err := b.Pool.Exec(ctx, `UPDATE clusters SET status = 'deleted', deleted_at = now() WHERE id = $1`, cl)
	require.NoError(t, err)
	_, body = admin.Get(path)
	require.NotContains(t, body, `data-testid="admin-cluster-delete"`)
	resp = admin.Post(path, path+"/delete", url.Values{"confirm": {"doomed-u7i8o9"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.Get(path)
	require.Contains(t, body, "This cluster is already deleted.")
	var audited int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'admin.cluster_delete'`).Scan(&audited))
	require.Equal(t, 2, audited)
}

// TestAdminClusterRoutesAdminsOnly: every admin cluster route answers a
// signed-in user who is not an admin with 404 and changes nothing.
func TestAdminClusterRoutesAdminsOnly(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	user, email := b.SignedUpUser(t, "cluster-routes-user")
	cl := b.InsertCluster(t, b.UserID(t, email), "mine", "mine-p0o9i8", "v1.34.0", "nodeport", "failed")
	for _, r := range []struct {
		method, path string
		form         url.Values
	}{
		{http.MethodGet, "/admin/clusters", nil},
		{http.MethodGet, fmt.Sprintf("/admin/clusters/%d", cl), nil},
		{http.MethodGet, fmt.Sprintf("/admin/clusters/%d/metrics?range=24h", cl), nil},
		{http.MethodGet, fmt.Sprintf("/admin/clusters/%d/metrics.json?range=1h", cl), nil},
		{http.MethodPost, fmt.Sprintf("/admin/clusters/%d/retry", cl), nil},
		{http.MethodPost, fmt.Sprintf("/admin/clusters/%d/delete", cl), url.Values{"confirm": {"mine-p0o9i8"}}},
		{http.MethodPost, fmt.Sprintf("/admin/clusters/%d/suspend", cl), url.Values{"suspend_confirm": {"mine-p0o9i8"}}},
		{http.MethodPost, fmt.Sprintf("/admin/clusters/%d/resume", cl), nil},
	} {
		var code int
		if r.method == http.MethodGet {
			code, _ = user.Get(r.path)
		} else {
			code = user.Post("/", r.path, r.form).StatusCode
		}
		require.Equal(t, http.StatusNotFound, code, r.method+" "+r.path)
	}
	require.Equal(t, "failed", b.Cluster(t, cl).Status)
	require.Zero(t, b.ReconcileJobs(t, cl))
}
