package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/apikeys"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/queries"
)

// victim is what one user owns, whose ids another user tries.
type victim struct {
	user    queries.User
	apiKey  apikeys.Created
	cluster queries.Cluster
	nodeOp  queries.NodeOperation
	// joinToken is the row id of a token of cluster.
	joinToken int64
	// order is a pending order of user.
	order int64
	// webhook is a webhook channel of user; identity an account at a
	// sign-in provider linked to user.
	webhook, identity int64
	// org is user's personal organization.
	org int64
}

// userScopedRoutes lists every route that takes the id of something a user
// owns. Each later feature adds its routes here: requested by another
// signed-in user, every one must answer 404 and change nothing. /api/
// routes are called with the other user's API key, the form's "json"
// value as the body.
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
	{http.MethodGet, func(victim) string { return "/admin/plans" }, nil},
	{http.MethodPost, func(victim) string { return "/admin/plans" }, url.Values{"name": {"pwned"}, "max_clusters": {"999"}, "max_nodes_per_cluster": {"999"}, "max_hostnames_per_cluster": {"9"}, "currency": {"USD"}}},
	{http.MethodGet, func(victim) string { return "/admin/orders" }, nil},
	{http.MethodGet, func(victim) string { return "/admin/orders.csv" }, nil},
	{http.MethodGet, func(victim) string { return "/admin/orders/1" }, nil},
	{http.MethodPost, func(victim) string { return "/admin/orders/1/paid" }, url.Values{"reference": {"pwned"}}},
	{http.MethodPost, func(victim) string { return "/admin/orders/1/cancel" }, nil},
	{http.MethodPost, func(victim) string { return "/admin/orders/1/refund" }, url.Values{"amount": {"1"}, "reason": {"pwned"}}},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/billing/orders/%d", v.order) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/billing/orders/%d/receipt", v.order) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/billing/orders/%d/cancel", v.order) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/billing/orders/%d/checkout", v.order) }, nil},
	// Admin -> Clusters: every user's clusters, and the actions on them.
	{http.MethodGet, func(victim) string { return "/admin/clusters" }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/admin/clusters/%d", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/admin/clusters/%d/metrics.json?range=1h", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/admin/clusters/%d/retry", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/admin/clusters/%d/delete", v.cluster.ID) }, url.Values{"confirm": {"victims-cluster-abc123"}}},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/admin/clusters/%d/suspend", v.cluster.ID) }, url.Values{"suspend_confirm": {"victims-cluster-abc123"}}},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/admin/clusters/%d/resume", v.cluster.ID) }, nil},
	{http.MethodGet, func(victim) string { return "/admin/billing" }, nil},
	{http.MethodGet, func(victim) string { return "/admin/settings/sign-in" }, nil},
	{http.MethodPost, func(victim) string { return "/admin/settings/sign-in" }, url.Values{"oidc-issuer": {"https://evil.example"}, "oidc-clientId": {"pwned"}, "oidc-clientSecret": {"pwned"}, "password": {"password of attacker"}}},
	{http.MethodPost, func(victim) string { return "/admin/billing/settings" }, url.Values{"methods": {"manual"}, "manual_instructions": {"pwned"}, "order_expiry_hours": {"1"}, "grace_days": {"0"}}},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/admin/users/%d/subscription/plan", v.user.ID) }, url.Values{"plan_id": {"1"}, "reason": {"pwned"}}},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/admin/users/%d/subscription/extend", v.user.ID) }, url.Values{"days": {"366"}, "reason": {"pwned"}}},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/admin/users/%d/subscription/cancel", v.user.ID) }, url.Values{"reason": {"pwned"}}},
	{http.MethodGet, func(victim) string { return "/admin/settings/sign-up" }, nil},
	{http.MethodPost, func(victim) string { return "/admin/settings/sign-up" }, url.Values{"policy": {"closed"}}},
	{http.MethodPost, func(victim) string { return "/admin/settings/sign-up/invitations" }, url.Values{"email": {"pwned@example.com"}}},
	{http.MethodPost, func(victim) string { return "/admin/settings/sign-up/invitations/1/resend" }, nil},
	{http.MethodPost, func(victim) string { return "/admin/settings/sign-up/invitations/1/revoke" }, nil},
	{http.MethodGet, func(victim) string { return "/admin/settings/branding" }, nil},
	{http.MethodPost, func(victim) string { return "/admin/settings/branding" }, url.Values{"productName": {"pwned"}, "defaultLanguage": {"en"}, "sessionLifetime": {"24"}, "idleTimeout": {"60"}}},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/events?after=0", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/stream?after=0", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/node-rows/stream", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/edit", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/edit", v.cluster.ID) }, url.Values{"kubernetes_version": {"v1.34.0"}, "public_access_mode": {"nodeport"}, "description": {"pwned"}}},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/delete", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/delete", v.cluster.ID) }, url.Values{"confirm": {"victims-cluster"}}},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/retry", v.cluster.ID) }, nil},
	// Managed ingress.
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/ingress", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/ingress", v.cluster.ID) }, url.Values{"enabled": {"on"}}},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/ingress/disable", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/ingress/retry", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/ingress/mode", v.cluster.ID) }, url.Values{"mode": {"direct"}}},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/ingress/edge/retry", v.cluster.ID) }, nil},
	{http.MethodPatch, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d", v.cluster.ID) }, url.Values{"json": {`{"managed_ingress":true}`}}},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/ingress/hostnames", v.cluster.ID) }, url.Values{"name": {"pwned.example.com"}}},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/ingress/hostnames/remove", v.cluster.ID) }, url.Values{"name": {"victim.example.com"}}},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/ingress/hostnames/check", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/hostnames", v.cluster.ID) }, url.Values{"json": {`{"name":"pwned.example.com"}`}}},
	{http.MethodDelete, func(v victim) string {
		return fmt.Sprintf("/api/v1/clusters/%d/hostnames/victim.example.com", v.cluster.ID)
	}, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/kubeconfig", v.cluster.ID) }, nil},
	// Nodes: the victim's cluster and a node name.
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/nodes", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/nodes/worker-1", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/nodes/worker-1/live", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/nodes/worker-1/cordon", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/nodes/worker-1/uncordon", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/nodes/worker-1/ingress", v.cluster.ID) }, url.Values{"ingress": {"on"}, "public_address": {"203.0.113.9"}}},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/nodes/worker-1/drain", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/nodes/worker-1/drain", v.cluster.ID) }, url.Values{"grace_period": {"-1"}, "timeout": {"60"}}},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/nodes/worker-1/delete", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/nodes/worker-1/delete", v.cluster.ID) }, url.Values{"grace_period": {"-1"}, "timeout": {"60"}}},
	{http.MethodGet, func(v victim) string {
		return fmt.Sprintf("/clusters/%d/nodes/worker-1/operations/%d", v.cluster.ID, v.nodeOp.ID)
	}, nil},
	{http.MethodGet, func(v victim) string {
		return fmt.Sprintf("/clusters/%d/nodes/worker-1/operations/%d/stream", v.cluster.ID, v.nodeOp.ID)
	}, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/node-quota", v.cluster.ID) }, url.Values{"enabled": {"on"}}},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/stale-node-cleanup", v.cluster.ID) }, url.Values{"hours": {"1"}}},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/tokens", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/tokens", v.cluster.ID) }, url.Values{"lifetime": {"1h"}, "uses": {"1"}}},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/tokens/%d/live", v.cluster.ID, v.joinToken) }, nil},
	{http.MethodGet, func(v victim) string {
		return fmt.Sprintf("/clusters/%d/tokens/stream?ids=%d", v.cluster.ID, v.joinToken)
	}, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/tokens/%d/revoke", v.cluster.ID, v.joinToken) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/clusters/%d/tokens/%d/revoke", v.cluster.ID, v.joinToken) }, nil},
	// Metrics: the page, its JSON, and the API's.
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/metrics", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/metrics?range=30d", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/clusters/%d/metrics.json?range=1h", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/metrics?range=24h", v.cluster.ID) }, nil},
	// The JSON API, with the attacker's own key.
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d", v.cluster.ID) }, nil},
	{http.MethodPatch, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d", v.cluster.ID) }, url.Values{"json": {`{"description":"pwned"}`}}},
	{http.MethodDelete, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/kubeconfig", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/nodes", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/nodes/worker-1/cordon", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/nodes/worker-1/uncordon", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/nodes/worker-1/drain", v.cluster.ID) }, nil},
	{http.MethodDelete, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/nodes/worker-1", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string {
		return fmt.Sprintf("/api/v1/clusters/%d/nodes/worker-1/operations/%d", v.cluster.ID, v.nodeOp.ID)
	}, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/join-tokens", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/join-tokens", v.cluster.ID) }, url.Values{"json": {`{}`}}},
	{http.MethodGet, func(v victim) string {
		return fmt.Sprintf("/api/v1/clusters/%d/join-tokens/%d", v.cluster.ID, v.joinToken)
	}, nil},
	{http.MethodDelete, func(v victim) string {
		return fmt.Sprintf("/api/v1/clusters/%d/join-tokens/%d", v.cluster.ID, v.joinToken)
	}, nil},
	// API: the caller's account (notifications, API keys, profile).
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/api/v1/api-keys/%d", v.apiKey.Key.ID) }, nil},
	{http.MethodDelete, func(v victim) string { return fmt.Sprintf("/api/v1/api-keys/%d", v.apiKey.Key.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/api/v1/webhooks/%d", v.webhook) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/api/v1/webhooks/%d/test", v.webhook) }, nil},
	{http.MethodDelete, func(v victim) string { return fmt.Sprintf("/api/v1/webhooks/%d", v.webhook) }, nil},
	{http.MethodDelete, func(v victim) string { return fmt.Sprintf("/api/v1/me/identities/%d", v.identity) }, nil},

	// API: clusters and billing.
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/retry", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/events", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/ingress/retry", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/ingress/edge/retry", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/hostnames", v.cluster.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/hostnames/check", v.cluster.ID) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/nodes/worker-1", v.cluster.ID) }, nil},
	{http.MethodPut, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d/nodes/worker-1/ingress", v.cluster.ID) }, url.Values{"json": {`{"enabled":true}`}}},
	{http.MethodPatch, func(v victim) string { return fmt.Sprintf("/api/v1/clusters/%d", v.cluster.ID) }, url.Values{"json": {`{"stale_node_cleanup_hours":1}`}}},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/api/v1/orders/%d", v.order) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/api/v1/orders/%d/cancel", v.order) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/api/v1/orders/%d/checkout", v.order) }, nil},
	// Organizations: the victim's, to anyone not a member.
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/orgs/%d", v.org) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/orgs/%d/switch", v.org) }, nil},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/orgs/%d/leave", v.org) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/orgs/%d/leave", v.org) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/orgs/%d/members/%d/role", v.org, v.user.ID) }, url.Values{"role": {"viewer"}}},
	{http.MethodGet, func(v victim) string { return fmt.Sprintf("/orgs/%d/members/%d/remove", v.org, v.user.ID) }, nil},
	{http.MethodPost, func(v victim) string { return fmt.Sprintf("/orgs/%d/members/%d/remove", v.org, v.user.ID) }, nil},
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	q := queries.New(b.Pool)

	_, victimEmail := b.SignedUpUser(t, "victim")
	attacker, _ := b.SignedUpUser(t, "attacker")
	u, err := q.UserGetByEmail(ctx, victimEmail)
	require.NoError(t, err)
	key, err := (&apikeys.Service{Pool: b.Pool}).Create(ctx, actingAs(t, b.Pool, u.ID), "victim's key", apikeys.ScopeWrite, apikeys.Expiry{Choice: apikeys.ExpiryNever}, audit.Actor{UserID: u.ID, Email: u.Email})
	require.NoError(t, err)
	// A ready cluster, so that only ownership stands in the way.
	cl, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{
		OwnerID: u.ID, Name: "victims-cluster", Slug: "victims-cluster-abc123", KubernetesVersion: "v1.34.0", PublicAccessMode: "loadbalancer",
	})
	require.NoError(t, err)
	_, markErr := q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: cl.ID, Endpoint: "victims-cluster-abc123.clusters.test", Generation: cl.Generation})
	require.NoError(t, markErr)
	op, err := q.NodeOperationCreate(ctx, queries.NodeOperationCreateParams{ClusterID: cl.ID, NodeName: "worker-1", Kind: "drain"})
	require.NoError(t, err)
	jt, err := q.JoinTokenCreate(ctx, queries.JoinTokenCreateParams{ClusterID: cl.ID, TokenID: "abcdef", TokenHash: "victim-hash", SealedToken: b.Box.Seal([]byte("abcdef.0123456789abcdef"))})
	require.NoError(t, err)
	// Managed ingress could be switched on: only ownership stands in the
	// way.
	ist := ingress.DefaultSettings()
	ist.AppsBaseDomain = "apps.test"
	require.NoError(t, ingress.SaveSettings(ctx, q, ist))
	_, err = q.IngressSwitch(ctx, queries.IngressSwitchParams{ClusterID: cl.ID, Enabled: true})
	require.NoError(t, err)
	_, err = q.HostnameCreate(ctx, queries.HostnameCreateParams{ClusterID: cl.ID, Name: "victim.example.com"})
	require.NoError(t, err)
	order, err := q.OrderCreate(ctx, queries.OrderCreateParams{
		OrgID: actingAs(t, b.Pool, u.ID).OrgID, UserID: u.ID, PlanID: 1, Period: "month", Kind: "new", Currency: "USD", Amount: 1000, Total: 1000, Method: "manual",
		ExpiresAt: pgtype.Timestamptz{Time: time.Now().Add(time.Hour), Valid: true},
	})
	require.NoError(t, err)
	org, err := q.OrgPersonal(ctx, pgtype.Int8{Int64: u.ID, Valid: true})
	require.NoError(t, err)
	hook, err := q.WebhookChannelCreate(ctx, queries.WebhookChannelCreateParams{
		OrgID: pgtype.Int8{Int64: org.ID, Valid: true}, UserID: pgtype.Int8{Int64: u.ID, Valid: true}, Kind: "generic", Name: "victim's hook",
		UrlSealed: b.Box.Seal([]byte("https://hooks.example.com/victim")), UrlHost: "hooks.example.com", Lang: "en",
	})
	require.NoError(t, err)
	require.NoError(t, q.OAuthIdentityCreate(ctx, queries.OAuthIdentityCreateParams{UserID: u.ID, Provider: "github", Subject: "victim", Email: victimEmail}))
	identities, err := q.OAuthIdentityListByUser(ctx, u.ID)
	require.NoError(t, err)
	v := victim{user: u, apiKey: key, cluster: cl, nodeOp: op, joinToken: jt.ID, order: order.ID, webhook: hook.ID, identity: identities[0].ID, org: org.ID}
	attackerKey := attacker.CreateKey("attacker's key")

	for _, r := range userScopedRoutes {
		path := r.path(v)
		t.Run(r.method+" "+path, func(t *testing.T) {
			var code int
			switch {
			case strings.HasPrefix(path, "/api/"):
				code = b.APICall(t, r.method, path, attackerKey, r.form.Get("json")).Status
			case r.method == http.MethodGet:
				code, _ = attacker.Get(path)
			default:
				resp := attacker.Post("/", path, r.form)
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
	clAfter, err := q.ClusterGetByID(ctx, cl.ID)
	require.NoError(t, err)
	require.Equal(t, "ready", clAfter.Status)
	require.Empty(t, clAfter.Description)
	require.Equal(t, cl.Generation, clAfter.Generation)
	require.False(t, clAfter.StaleNodeCleanupHours.Valid, "the stale-node clean-up was not switched on")
	require.False(t, clAfter.DeleteRequestedAt.Valid)
	ingressRow, err := q.IngressGet(ctx, cl.ID)
	require.NoError(t, err)
	require.Equal(t, int64(1), ingressRow.Generation, "managed ingress was never switched by the attacker")
	names, err := q.HostnameListByCluster(ctx, cl.ID)
	require.NoError(t, err)
	require.Len(t, names, 1, "the victim's host name stays, and no other")
	jtAfter, err := q.JoinTokenListByCluster(ctx, cl.ID)
	require.NoError(t, err)
	require.Len(t, jtAfter, 1)
	require.False(t, jtAfter[0].RevokedAt.Valid)
	hooksAfter, err := q.WebhookChannelListPersonal(ctx, u.ID)
	require.NoError(t, err)
	require.Len(t, hooksAfter, 1, "the victim's webhook stays")
	require.Zero(t, countRows(t, b, "SELECT count(*) FROM webhook_attempts"), "and was sent nothing")
	identitiesAfter, err := q.OAuthIdentityListByUser(ctx, u.ID)
	require.NoError(t, err)
	require.Len(t, identitiesAfter, 1, "the victim's identity stays linked")
	members, err := q.OrgMembers(ctx, queries.OrgMembersParams{OrgID: org.ID, MemberID: u.ID})
	require.NoError(t, err)
	require.Len(t, members, 1, "the victim's organization is the victim's alone")
	require.Equal(t, "owner", members[0].Role)
	orderAfter, err := q.OrderGet(ctx, order.ID)
	require.NoError(t, err)
	require.Equal(t, "pending", orderAfter.Status, "the victim's order was not cancelled")
	var actions int
	// The platform's own (its workers may switch the node quota on
	// meanwhile) are not the attacker's.
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT count(*) FROM audit_events WHERE action LIKE 'cluster.%' AND actor_email IS DISTINCT FROM 'system'").Scan(&actions))
	require.Zero(t, actions, "no cluster action was recorded")
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT count(*) FROM audit_events WHERE action LIKE 'node.%'").Scan(&actions))
	require.Zero(t, actions, "no node action was recorded")
	req, err := http.NewRequest(http.MethodGet, b.Server.URL+"/api/v1/me", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key.Value)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
