package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/clusters"
)

// apiAdminCluster is the admin API's cluster, as far as the tests read it.
type apiAdminCluster struct {
	ID          int64   `json:"id"`
	Slug        string  `json:"slug"`
	Status      string  `json:"status"`
	OwnerID     int64   `json:"owner_id"`
	OwnerEmail  string  `json:"owner_email"`
	SuspendedAt *string `json:"suspended_at"`
	Nodes       []struct {
		Name, Status string
	} `json:"nodes"`
	JoinTokens []map[string]any `json:"join_tokens"`
	Events     []struct {
		Reason string `json:"reason"`
	} `json:"events"`
}

// allPages reads every page of the API list at path (with its query, a
// limit among it), checking each holds limit items at most, and returns
// the items under name in order.
func allPages[T any](t *testing.T, b *handlerstest.Bundle, key, path, name string, limit int) []T {
	t.Helper()
	var items []T
	next := path
	for next != "" {
		r := b.APICall(t, http.MethodGet, next, key, "")
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		page := handlerstest.DecodeAs[map[string]json.RawMessage](t, r)
		var got []T
		require.NoError(t, json.Unmarshal(page[name], &got), r.Body)
		require.LessOrEqual(t, len(got), limit)
		items = append(items, got...)
		next = ""
		if raw, ok := page["next"]; ok {
			var cursor string
			require.NoError(t, json.Unmarshal(raw, &cursor))
			next = path + "&cursor=" + url.QueryEscape(cursor)
		}
	}
	return items
}

// apiItem is an item of an API list, by its id.
type apiItem struct {
	ID int64 `json:"id"`
}

// idsOf are the ids of API items.
func idsOf(items []apiItem) []int64 {
	var ids []int64
	for _, i := range items {
		ids = append(ids, i.ID)
	}
	return ids
}

// TestAPIAdminClusters: an admin key reads every user's clusters under
// the back office's filters, a page at a time, and any one cluster with
// its owner, nodes, join tokens (never their secret) and events, and its
// metrics; unknown clusters are 404, filters no cluster can match 422.
func TestAPIAdminClusters(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, _ := b.SignedUpAdmin(t, "api-clusters-admin")
	key := admin.CreateScopedKey("ops", "admin")
	_, aliceEmail := b.SignedUpUser(t, "api-clusters-alice")
	_, bobEmail := b.SignedUpUser(t, "api-clusters-bob")
	alice, bob := b.UserID(t, aliceEmail), b.UserID(t, bobEmail)

	web := b.InsertCluster(t, alice, "web", "web-a1b2c3", "v1.34.0", "nodeport", "ready")
	db := b.InsertCluster(t, bob, "db", "db-d4e5f6", "v1.33.4", "loadbalancer", "failed")
	gone := b.InsertCluster(t, bob, "gone", "gone-g7h8i9", "v1.34.0", "nodeport", "deleted")
	extra := b.InsertCluster(t, alice, "web-two", "web-two-j1k2l3", "v1.34.0", "nodeport", "ready")
	_, err := b.Pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready, conditions, addresses, kubelet_version)
		VALUES ($1, 'n1', true, '[]', '[]', 'v1.34.0'), ($1, 'n2', false, '[]', '[]', 'v1.34.0')`, web)
	require.NoError(t, err)
	sealed := b.Box.Seal([]byte("a1b2c3.0123456789abcdef"))
	_, err = b.Pool.Exec(ctx, `INSERT INTO join_tokens (cluster_id, token_id, token_hash, sealed_token, description)
		VALUES ($1, 'a1b2c3', 'hash-of-the-secret-token', $2, 'rack 7')`, web, sealed)
	require.NoError(t, err)
	b.Event(t, web, "info", "Installing", "")
	b.Event(t, web, "info", "Ready", "")

	r := b.APICall(t, http.MethodGet, "/api/v1/admin/clusters", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	list := handlerstest.DecodeAs[struct {
		Clusters []map[string]any `json:"clusters"`
	}](t, r).Clusters
	require.NotContains(t, r.Body, `"next"`, "one page")
	require.Len(t, list, 3, "the deleted one left out")
	row := list[2]
	require.NotEmpty(t, row["created_at"])
	delete(row, "created_at")
	require.Equal(t, map[string]any{
		"id": float64(web), "name": "web", "slug": "web-a1b2c3", "owner_id": float64(alice), "owner_email": aliceEmail, "status": "ready",
		"kubernetes_version": "v1.34.0", "public_access_mode": "nodeport", "nodes": float64(2),
	}, row, "the oldest last")

	for _, tt := range []struct {
		name, query string
		want        []int64
	}{
		{"every page", "", []int64{extra, db, web}},
		{"status", "status=failed", []int64{db}},
		{"deleted", "status=deleted", []int64{gone}},
		{"owner, in any case", "owner=" + url.QueryEscape(strings.ToUpper(bobEmail)), []int64{db}},
		{"version", "version=v1.34.0", []int64{extra, web}},
		{"access", "access=loadbalancer", []int64{db}},
		{"search", "q=WEB", []int64{extra, web}},
		{"search slug", "q=d4e5", []int64{db}},
		{"search literal", "q=%25", nil},
		{"combined", "access=nodeport&q=two&owner=" + url.QueryEscape(aliceEmail), []int64{extra}},
	} {
		rows := allPages[apiItem](t, b, key, "/api/v1/admin/clusters?limit=1&"+tt.query, "clusters", 1)
		require.Equal(t, tt.want, idsOf(rows), tt.name)
	}

	for _, tt := range []struct{ query, field string }{
		{"status=broken", "status"},
		{"access=ingress", "access"},
	} {
		r := b.APICall(t, http.MethodGet, "/api/v1/admin/clusters?"+tt.query, key, "")
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
		require.Contains(t, handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields, tt.field)
	}
	for _, q := range []string{"limit=0", "cursor=abc"} {
		r := b.APICall(t, http.MethodGet, "/api/v1/admin/clusters?"+q, key, "")
		require.Equal(t, http.StatusBadRequest, r.Status, q)
	}

	r = b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/admin/clusters/%d", web), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.NotContains(t, r.Body, "hash-of-the-secret-token")
	require.NotContains(t, r.Body, sealed)
	require.NotContains(t, r.Body, "0123456789abcdef")
	detail := handlerstest.DecodeAs[apiAdminCluster](t, r)
	require.Equal(t, alice, detail.OwnerID)
	require.Equal(t, aliceEmail, detail.OwnerEmail)
	require.Equal(t, "web-a1b2c3", detail.Slug)
	require.Nil(t, detail.SuspendedAt)
	require.Len(t, detail.Nodes, 2)
	require.Len(t, detail.JoinTokens, 1)
	require.Equal(t, "rack 7", detail.JoinTokens[0]["description"])
	require.Equal(t, "a1b2c3", detail.JoinTokens[0]["token_id"])
	require.Len(t, detail.Events, 2)
	require.Equal(t, "Ready", detail.Events[1].Reason, "oldest first")
	r = b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/admin/clusters/%d", gone), key, "")
	require.Equal(t, http.StatusOK, r.Status, "a deleted cluster is still there for admins")
	require.Equal(t, "deleted", handlerstest.DecodeAs[apiAdminCluster](t, r).Status)

	r = b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/admin/clusters/%d/metrics?range=24h", web), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"range":"24h"`)
	r = b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/admin/clusters/%d/metrics?range=2h", web), key, "")
	require.Equal(t, http.StatusUnprocessableEntity, r.Status)
	require.Contains(t, handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields, "range")

	for _, path := range []string{"/api/v1/admin/clusters/999999", "/api/v1/admin/clusters/999999/metrics"} {
		r := b.APICall(t, http.MethodGet, path, key, "")
		require.Equal(t, http.StatusNotFound, r.Status, path)
		require.Equal(t, "Cluster not found", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Message, path)
	}
	code, _ := admin.Get("/admin/clusters/999999/metrics.json")
	require.Equal(t, http.StatusNotFound, code, "nor in the back office")
}

// TestAPIAdminClusterActions: each of the back office's actions on any
// user's cluster, with an admin key and no typed slug: 202 with the
// cluster as it is now and its Location, the work queued, the action
// audited as the admin's and told to the owner, as the back office shows
// it; an action the cluster's state refuses is 409 and changes nothing,
// an unknown cluster 404.
func TestAPIAdminClusterActions(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, adminEmail := b.SignedUpAdmin(t, "api-actions-admin")
	key := admin.CreateScopedKey("ops", "admin")
	_, email := b.SignedUpUser(t, "api-actions-owner")
	owner := b.UserID(t, email)

	for _, tt := range []struct {
		action, from, to, audit, notice string
		refusedIn                       string
	}{
		{"retry", clusters.StatusFailed, clusters.StatusPending, "admin.cluster_retry", "ClusterAdminRetried", clusters.StatusReady},
		{"delete", clusters.StatusProvisioning, clusters.StatusDeleting, "admin.cluster_delete", "ClusterAdminDeleted", clusters.StatusDeleted},
		{"suspend", clusters.StatusReady, clusters.StatusSuspended, "admin.cluster_suspend", "ClusterAdminSuspended", clusters.StatusFailed},
		{"resume", clusters.StatusSuspended, clusters.StatusResuming, "admin.cluster_resume", "ClusterAdminResumed", clusters.StatusReady},
	} {
		t.Run(tt.action, func(t *testing.T) {
			cl := b.InsertCluster(t, owner, tt.action, tt.action+"-q1w2e3", "v1.34.0", "nodeport", tt.from)
			path := fmt.Sprintf("/api/v1/admin/clusters/%d", cl)

			r := b.APICall(t, http.MethodPost, path+"/"+tt.action, key, "")
			require.Equal(t, http.StatusAccepted, r.Status, r.Body)
			require.Equal(t, path, r.Header.Get("Location"))
			got := handlerstest.DecodeAs[apiAdminCluster](t, r)
			require.Equal(t, tt.to, got.Status)
			require.Equal(t, email, got.OwnerEmail)
			require.NotEmpty(t, got.Events, "the action is on the timeline")
			require.Equal(t, 1, b.ReconcileJobs(t, cl), "the work is queued")

			// Read back through the API and the back office.
			r = b.APICall(t, http.MethodGet, r.Header.Get("Location"), key, "")
			require.Equal(t, tt.to, handlerstest.DecodeAs[apiAdminCluster](t, r).Status)
			_, page := admin.Get("/admin/clusters?status=" + tt.to)
			require.Contains(t, adminClusterIDs(t, page), fmt.Sprint(cl))

			var actor, details string
			require.NoError(t, b.Pool.QueryRow(ctx, `SELECT actor_email, details::text FROM audit_events
				WHERE action = $1 AND target_type = 'cluster' AND target_id = $2`, tt.audit, fmt.Sprint(cl)).Scan(&actor, &details))
			require.Equal(t, adminEmail, actor)
			require.Contains(t, details, fmt.Sprintf(`"owner_id": %d`, owner))
			b.RequireNotified(t, owner, tt.notice)

			// In a state the action does not apply to: 409, nothing done.
			refused := b.InsertCluster(t, owner, tt.action+"-no", tt.action+"-no-e4r5t6", "v1.34.0", "nodeport", tt.refusedIn)
			r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/admin/clusters/%d/%s", refused, tt.action), key, "")
			require.Equal(t, http.StatusConflict, r.Status, r.Body)
			require.Equal(t, "conflict", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Code)
			require.Equal(t, tt.refusedIn, b.Cluster(t, refused).Status)
			require.Zero(t, b.ReconcileJobs(t, refused))

			r = b.APICall(t, http.MethodPost, "/api/v1/admin/clusters/999999/"+tt.action, key, "")
			require.Equal(t, http.StatusNotFound, r.Status)
		})
	}
}
