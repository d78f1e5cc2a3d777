package handlers_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/queries"
)

// TestEdgeRoutesAPI checks the route agents' API: only an edge token
// reads it; it serves, for the clusters whose managed ingress goes
// through the edge, each Ready node's Pod CIDR via its InternalIP, and
// nothing of other clusters or of networks outside the cluster's; a poll
// naming the current version waits and answers as soon as a node becomes
// Ready; a report is stored per token and node, and a bad one refused.
func TestEdgeRoutesAPI(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	ctx := context.Background()
	c, _ := b.SignedUpUser(t, "routes-owner")
	routed := b.NewCluster(t, c, "routed")
	direct := b.NewCluster(t, c, "direct")
	require.True(t, routed.PodCidrPooled, "a network of its own from the default pool")
	_, err := b.Pool.Exec(ctx, `INSERT INTO cluster_ingress (cluster_id, enabled, mode) VALUES ($1, true, 'edge'), ($2, true, 'direct')`, routed.ID, direct.ID)
	require.NoError(t, err)
	b.RoutedNode(t, routed, "worker-a", true, handlerstest.PodSubnet(t, routed, 0), "192.168.10.5")
	b.RoutedNode(t, routed, "worker-b", false, handlerstest.PodSubnet(t, routed, 1), "192.168.10.6")
	b.RoutedNode(t, routed, "stray", true, "172.16.0.0/24", "192.168.10.7")
	b.RoutedNode(t, direct, "worker-a", true, handlerstest.PodSubnet(t, direct, 0), "192.168.20.5")
	tok := b.EdgeToken(t, "agents")

	r := b.APICall(t, http.MethodGet, "/api/v1/edge/routes", "", "")
	require.Equal(t, http.StatusUnauthorized, r.Status, r.Body)
	r = b.APICall(t, http.MethodGet, "/api/v1/edge/routes", tok.Value, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	routes := handlerstest.DecodeAs[edgewire.TenantRoutes](t, r)
	require.NotEmpty(t, routes.Version)
	require.Equal(t, strconv.Quote(routes.Version), r.Header.Get("ETag"))
	require.Equal(t, []edgewire.TenantRoute{{ClusterID: routed.ID, Node: "worker-a", Dst: handlerstest.PodSubnet(t, routed, 0), Via: "192.168.10.5"}}, routes.Routes)

	r = b.APICall(t, http.MethodGet, "/api/v1/edge/routes?version="+routes.Version+"&wait=1", tok.Value, "")
	require.Equal(t, http.StatusNotModified, r.Status, r.Body)
	r = b.APICall(t, http.MethodGet, "/api/v1/edge/routes?wait=3600", tok.Value, "")
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)

	// A long poll answers as soon as worker-b is Ready.
	polled := make(chan handlerstest.APIResponse, 1)
	start := time.Now()
	go func() {
		polled <- b.APICall(t, http.MethodGet, "/api/v1/edge/routes?version="+routes.Version+"&wait=20", tok.Value, "")
	}()
	time.Sleep(300 * time.Millisecond) // the poll is waiting
	b.RoutedNode(t, routed, "worker-b", true, handlerstest.PodSubnet(t, routed, 1), "192.168.10.6")
	r = <-polled
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Less(t, time.Since(start), 10*time.Second)
	next := handlerstest.DecodeAs[edgewire.TenantRoutes](t, r)
	require.Len(t, next.Routes, 2)
	require.Equal(t, "worker-b", next.Routes[1].Node)

	// Switched to direct: no routes.
	_, err = b.Pool.Exec(ctx, `UPDATE cluster_ingress SET mode = 'direct' WHERE cluster_id = $1`, routed.ID)
	require.NoError(t, err)
	r = b.APICall(t, http.MethodGet, "/api/v1/edge/routes?version="+next.Version+"&wait=10", tok.Value, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Empty(t, handlerstest.DecodeAs[edgewire.TenantRoutes](t, r).Routes)

	// Reports.
	report := `{"node":"host-1","version":"` + next.Version + `","in_place":2,"added":2,"replaced":0,"removed":0,
		"failed":{"10.128.9.0/24":"via 192.168.10.9 is not on a connected network"},"error":""}`
	r = b.APICall(t, http.MethodPost, "/api/v1/edge/routes/status", tok.Value, report)
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	r = b.APICall(t, http.MethodPost, "/api/v1/edge/routes/status", tok.Value, strings.Replace(report, `"removed":0`, `"removed":1`, 1))
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	agents, err := queries.New(b.Pool).RouteAgentList(ctx, pgtype.Timestamptz{Time: time.Now().Add(-time.Minute), Valid: true})
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
		r = b.APICall(t, http.MethodPost, "/api/v1/edge/routes/status", tok.Value, bad.body)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
		require.Contains(t, r.Body, `"`+bad.field+`"`)
	}
	r = b.APICall(t, http.MethodPost, "/api/v1/edge/routes/status", "", report)
	require.Equal(t, http.StatusUnauthorized, r.Status, r.Body)

	// The admin's Edge page lists the agent, behind the current routes
	// (it applied the last version but one) with its failure counted.
	admin, _ := b.SignedUpAdmin(t, "routes-admin")
	_, body := admin.Get("/admin/edge")
	require.Contains(t, body, `data-testid="route-agent" data-node="host-1"`)
	require.Contains(t, body, `data-testid="route-agent-behind"`)
	require.Contains(t, body, "2 in place, 1 failed")
	require.Contains(t, body, "Routes to tenants&#39; Pod CIDRs every host node should have: 0")
	status, _ := c.Get("/admin/edge")
	require.Equal(t, http.StatusNotFound, status, "not for users")
}
