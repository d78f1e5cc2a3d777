package handlers_test

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/queries"
)

// routedNode records a node of cluster c as the health job would: Ready
// or not, with its Pod CIDR and InternalIP.
func (b *testBundle) routedNode(t *testing.T, c queries.Cluster, name string, ready bool, podCIDR, internalIP string) {
	t.Helper()
	status := "False"
	if ready {
		status = "True"
	}
	_, err := b.pool.Exec(context.Background(), `
		INSERT INTO nodes (cluster_id, name, ready, conditions, kubelet_version, addresses, pod_cidr)
		VALUES ($1, $2, $3, jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', $4::text)), 'v1.34.0',
		        jsonb_build_array(jsonb_build_object('type', 'InternalIP', 'address', $5::text)), $6::cidr)
		ON CONFLICT (cluster_id, name) DO UPDATE SET ready = EXCLUDED.ready, conditions = EXCLUDED.conditions,
		        addresses = EXCLUDED.addresses, pod_cidr = EXCLUDED.pod_cidr`,
		c.ID, name, ready, status, internalIP, podCIDR)
	require.NoError(t, err)
}

// subnet is the i-th /24 of the cluster's Pod network.
func subnet(t *testing.T, c queries.Cluster, i int) string {
	t.Helper()
	require.LessOrEqual(t, c.PodCidr.Bits(), 24)
	a := c.PodCidr.Addr().As4()
	a[2] += byte(i)
	return netip.PrefixFrom(netip.AddrFrom4(a), 24).String()
}

// TestEdgeRoutesAPI checks the route agents' API: only an edge token
// reads it; it serves, for the clusters whose managed ingress goes
// through the edge, each Ready node's Pod CIDR via its InternalIP, and
// nothing of other clusters or of networks outside the cluster's; a poll
// naming the current version waits and answers as soon as a node becomes
// Ready; a report is stored per token and node, and a bad one refused.
func TestEdgeRoutesAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	ctx := context.Background()
	c, _ := b.signedUpUser(t, "routes-owner")
	routed := b.newCluster(t, c, "routed")
	direct := b.newCluster(t, c, "direct")
	require.True(t, routed.PodCidrPooled, "a network of its own from the default pool")
	_, err := b.pool.Exec(ctx, `INSERT INTO cluster_ingress (cluster_id, enabled, mode) VALUES ($1, true, 'edge'), ($2, true, 'direct')`, routed.ID, direct.ID)
	require.NoError(t, err)
	b.routedNode(t, routed, "worker-a", true, subnet(t, routed, 0), "192.168.10.5")
	b.routedNode(t, routed, "worker-b", false, subnet(t, routed, 1), "192.168.10.6")
	b.routedNode(t, routed, "stray", true, "172.16.0.0/24", "192.168.10.7")
	b.routedNode(t, direct, "worker-a", true, subnet(t, direct, 0), "192.168.20.5")
	tok := b.edgeToken(t, "agents")

	r := b.apiCall(t, http.MethodGet, "/api/v1/edge/routes", "", "")
	require.Equal(t, http.StatusUnauthorized, r.status, r.body)
	r = b.apiCall(t, http.MethodGet, "/api/v1/edge/routes", tok.Value, "")
	require.Equal(t, http.StatusOK, r.status, r.body)
	routes := decodeAs[edgewire.TenantRoutes](t, r)
	require.NotEmpty(t, routes.Version)
	require.Equal(t, strconv.Quote(routes.Version), r.header.Get("ETag"))
	require.Equal(t, []edgewire.TenantRoute{{ClusterID: routed.ID, Node: "worker-a", Dst: subnet(t, routed, 0), Via: "192.168.10.5"}}, routes.Routes)

	r = b.apiCall(t, http.MethodGet, "/api/v1/edge/routes?version="+routes.Version+"&wait=1", tok.Value, "")
	require.Equal(t, http.StatusNotModified, r.status, r.body)
	r = b.apiCall(t, http.MethodGet, "/api/v1/edge/routes?wait=3600", tok.Value, "")
	require.Equal(t, http.StatusBadRequest, r.status, r.body)

	// A long poll answers as soon as worker-b is Ready.
	polled := make(chan apiResponse, 1)
	start := time.Now()
	go func() {
		polled <- b.apiCall(t, http.MethodGet, "/api/v1/edge/routes?version="+routes.Version+"&wait=20", tok.Value, "")
	}()
	time.Sleep(300 * time.Millisecond) // the poll is waiting
	b.routedNode(t, routed, "worker-b", true, subnet(t, routed, 1), "192.168.10.6")
	r = <-polled
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Less(t, time.Since(start), 10*time.Second)
	next := decodeAs[edgewire.TenantRoutes](t, r)
	require.Len(t, next.Routes, 2)
	require.Equal(t, "worker-b", next.Routes[1].Node)

	// Switched to direct: no routes.
	_, err = b.pool.Exec(ctx, `UPDATE cluster_ingress SET mode = 'direct' WHERE cluster_id = $1`, routed.ID)
	require.NoError(t, err)
	r = b.apiCall(t, http.MethodGet, "/api/v1/edge/routes?version="+next.Version+"&wait=10", tok.Value, "")
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Empty(t, decodeAs[edgewire.TenantRoutes](t, r).Routes)

	// Reports.
	report := `{"node":"host-1","version":"` + next.Version + `","in_place":2,"added":2,"replaced":0,"removed":0,
		"failed":{"10.128.9.0/24":"via 192.168.10.9 is not on a connected network"},"error":""}`
	r = b.apiCall(t, http.MethodPost, "/api/v1/edge/routes/status", tok.Value, report)
	require.Equal(t, http.StatusNoContent, r.status, r.body)
	r = b.apiCall(t, http.MethodPost, "/api/v1/edge/routes/status", tok.Value, strings.Replace(report, `"removed":0`, `"removed":1`, 1))
	require.Equal(t, http.StatusNoContent, r.status, r.body)
	agents, err := queries.New(b.pool).RouteAgentList(ctx, pgtype.Timestamptz{Time: time.Now().Add(-time.Minute), Valid: true})
	require.NoError(t, err)
	require.Len(t, agents, 1, "one row per token and node")
	require.Equal(t, "host-1", agents[0].Node)
	require.Equal(t, "agents", agents[0].TokenName)
	require.Equal(t, int32(2), agents[0].InPlace)
	require.Equal(t, int32(1), agents[0].Removed)
	require.JSONEq(t, `{"10.128.9.0/24":"via 192.168.10.9 is not on a connected network"}`, string(agents[0].Failed))
	for _, bad := range []struct{ body, field string }{
		{`{"node":"","version":"v"}`, "node"},
		{`{"node":"host-1","in_place":-1}`, "failed"},
	} {
		r = b.apiCall(t, http.MethodPost, "/api/v1/edge/routes/status", tok.Value, bad.body)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, r.body)
		require.Contains(t, r.body, `"`+bad.field+`"`)
	}
	r = b.apiCall(t, http.MethodPost, "/api/v1/edge/routes/status", "", report)
	require.Equal(t, http.StatusUnauthorized, r.status, r.body)

	// The admin's Edge page lists the agent, behind the current routes
	// (it applied the last version but one) with its failure counted.
	admin, _ := b.signedUpAdmin(t, "routes-admin")
	_, body := admin.get("/admin/edge")
	require.Contains(t, body, `data-testid="route-agent" data-node="host-1"`)
	require.Contains(t, body, `data-testid="route-agent-behind"`)
	require.Contains(t, body, "2 in place, 1 failed")
	require.Contains(t, body, "Routes to tenants&#39; Pod CIDRs every host node should have: 0")
	status, _ := c.get("/admin/edge")
	require.Equal(t, http.StatusNotFound, status, "not for users")
}
