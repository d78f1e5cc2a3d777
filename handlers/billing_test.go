package handlers_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBillingPage: a user sees their plan (the default one) and what they
// use of each limit, their own only, over a limit marked; in Chinese the
// plan's Chinese name; the same from GET /api/v1/billing; signed out, the
// page asks to sign in.
func TestBillingPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	ctx := context.Background()
	c, email := b.signedUpUser(t, "billing-user")
	other, _ := b.signedUpUser(t, "billing-other")
	var uid int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM users WHERE email = $1`, email).Scan(&uid))
	// Two clusters, one with four nodes and a host name; the other user's
	// clusters count for them, not for this user.
	for _, cl := range []struct {
		owner *client
		name  string
	}{{c, "one"}, {c, "two"}, {other, "theirs"}, {other, "theirs-too"}, {other, "theirs-three"}} {
		b.newCluster(t, cl.owner, cl.name)
	}
	_, err := b.pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready)
		SELECT c.id, 'n' || i, true FROM clusters c, generate_series(1, 4) i WHERE c.owner_id = $1 AND c.name = 'one'`, uid)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO cluster_hostnames (cluster_id, name, managed)
		SELECT c.id, 'shop.example.com', false FROM clusters c WHERE c.owner_id = $1 AND c.name = 'one'`, uid)
	require.NoError(t, err)
	// The free plan allows 3 nodes per cluster here.
	_, err = b.pool.Exec(ctx, `UPDATE plans SET max_nodes_per_cluster = 3, name_zh = '免费版' WHERE is_default`)
	require.NoError(t, err)

	code, body := c.get("/billing")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="billing-plan-name">free<`)
	require.Contains(t, body, `data-testid="billing-limit-clusters" data-used="2" data-max="3"`)
	require.Contains(t, body, `data-testid="billing-limit-nodes" data-used="4" data-max="3" data-over`)
	require.Contains(t, body, `data-testid="billing-limit-hostnames" data-used="1" data-max="10"`)
	require.Contains(t, body, `data-testid="billing-over-nodes"`)
	require.NotContains(t, body, `data-testid="billing-over-clusters"`)
	require.Contains(t, body, "2 of 3")
	require.Contains(t, body, "USD 0.00 a month")

	_, err = b.pool.Exec(ctx, `UPDATE users SET language = 'zh-CN' WHERE id = $1`, uid)
	require.NoError(t, err)
	_, body = c.get("/billing")
	require.Contains(t, body, `data-testid="billing-plan-name">免费版<`)
	require.Contains(t, body, "已用 2 / 3")

	key := c.createKey("billing")
	r := b.apiCall(t, http.MethodGet, "/api/v1/billing", key, "")
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.JSONEq(t, `{"plan":{"id":1,"name":"free","default":true,"max_clusters":3,"max_nodes_per_cluster":3,"max_hostnames_per_cluster":10,
		"managed_ingress":true,"currency":"USD","price_monthly":0,"price_yearly":0},
		"usage":{"clusters":2,"most_nodes_in_a_cluster":4,"most_hostnames_in_a_cluster":1}}`, r.body)
	r = b.apiCall(t, http.MethodGet, "/api/v1/billing", "kb_nonsense", "")
	require.Equal(t, http.StatusUnauthorized, r.status)

	resp, err := b.client(t).http.Get(b.server.URL + "/billing")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "/login")
}
