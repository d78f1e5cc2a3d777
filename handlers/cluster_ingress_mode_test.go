package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/queries"
)

// TestClusterIngressMode: the platform edge is offered once the admin
// names the shared Gateway's class, and only to a cluster whose Pod
// network is its own; chosen from the panel (or the API), the panel and
// the API show how the host nodes' route agents stand with its routes.
// Bad choices are said where the user is; another user cannot choose.
func TestClusterIngressMode(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	ctx := context.Background()
	q := queries.New(b.Pool)
	c, _ := b.SignedUpUser(t, "edgemode")
	cl := b.NewCluster(t, c, "shop")
	key := c.CreateKey("key")
	page := fmt.Sprintf("/clusters/%d", cl.ID)
	panel := page + "/ingress"
	api := fmt.Sprintf("/api/v1/clusters/%d", cl.ID)
	b.SetIngressSettings(t)

	// Not set up: edge is offered nowhere.
	_, body := c.Get(panel)
	require.Contains(t, body, `data-testid="cluster-ingress-mode" data-mode="direct"`)
	require.Regexp(t, `value="edge"[^>]*disabled`, body)
	require.Contains(t, body, "The platform edge is not set up")
	resp := c.Post(page, panel+"/mode", url.Values{"mode": {"edge"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get(page)
	require.Contains(t, body, "The platform edge is not set up", "the flash says why")
	r := b.APICall(t, http.MethodPatch, api, key, `{"managed_ingress_mode":"edge"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Contains(t, r.Body, `"code":"not_configured"`)
	r = b.APICall(t, http.MethodPatch, api, key, `{"managed_ingress_mode":"tunnel"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Contains(t, r.Body, `"managed_ingress_mode":"Choose direct or through the platform edge."`)

	st, err := ingress.LoadSettings(ctx, q)
	require.NoError(t, err)
	st.GatewayClass = "eg"
	require.NoError(t, ingress.SaveSettings(ctx, q, st))
	_, body = c.Get(panel)
	require.NotRegexp(t, `value="edge"[^>]*disabled`, body)

	// Another user cannot choose for it.
	other, _ := b.SignedUpUser(t, "edgemode-other")
	resp = other.Post("/clusters", panel+"/mode", url.Values{"mode": {"edge"}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp = c.Post(page, panel+"/mode", url.Values{"mode": {"edge"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get(page)
	require.Contains(t, body, "Traffic path saved.")
	row, err := q.IngressGet(ctx, cl.ID)
	require.NoError(t, err)
	require.Equal(t, ingress.ModeEdge, row.Mode)
	require.False(t, row.Enabled, "choosing the path does not switch it on")
	require.Equal(t, 1, b.AuditCount(t, "cluster.managed_ingress_mode"))
	_, body = c.Get(panel)
	require.Contains(t, body, `data-mode="edge"`)
	require.Contains(t, body, "No route agent has reported in the last 2 minutes.")

	// A route agent that applied the current routes: in place; one that
	// failed this cluster's route: failed, with why.
	resp = c.Post(page, panel, url.Values{"enabled": {"on"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	b.RoutedNode(t, cl, "worker-a", true, handlerstest.PodSubnet(t, cl, 0), "192.168.30.5")
	routes, err := edge.DesiredRoutes(ctx, q)
	require.NoError(t, err)
	require.Len(t, routes.Routes, 1)
	tok := b.EdgeToken(t, "agents")
	for _, report := range []string{
		`{"node":"host-1","version":"` + routes.Version + `","in_place":1,"added":1}`,
		`{"node":"host-2","version":"` + routes.Version + `","in_place":0,"failed":{"` + routes.Routes[0].Dst + `":"network is unreachable"}}`,
	} {
		r = b.APICall(t, http.MethodPost, "/api/v1/edge/routes/status", tok.Value, report)
		require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	}
	// The watcher of the routes hears of the new node within moments.
	require.Eventually(t, func() bool {
		_, body = c.Get(panel)
		return strings.Contains(body, "In place on 1 of 2 host nodes (1 routes).")
	}, 10*time.Second, 50*time.Millisecond, "the panel counts host-1 in place")
	require.Contains(t, body, `data-node="host-1" data-state="in_place"`)
	require.Contains(t, body, `data-node="host-2" data-state="failed"`)
	require.Contains(t, body, routes.Routes[0].Dst+" via 192.168.30.5: network is unreachable")
	require.Contains(t, body, `data-testid="cluster-ingress-edge" data-edge-state=""`)
	require.Contains(t, body, "Not routed yet")
	// As the edge check records it (TestIngressEdge in jobs).
	_, err = b.Pool.Exec(ctx, `UPDATE cluster_ingress SET edge_state = 'routed', edge_pods = '{10.128.0.10,10.128.1.10}' WHERE cluster_id = $1`, cl.ID)
	require.NoError(t, err)
	resp = c.Post(page, panel+"/hostnames", url.Values{"name": {"shop.apps.test"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, err = b.Pool.Exec(ctx, `UPDATE cluster_hostnames SET edge_status = 'ok' WHERE cluster_id = $1`, cl.ID)
	require.NoError(t, err)
	_, body = c.Get(panel)
	require.Contains(t, body, `data-edge-state="routed"`)
	require.Contains(t, body, "Routed to the controller pods")
	require.Contains(t, body, "10.128.0.10, 10.128.1.10")
	require.Contains(t, body, `data-testid="cluster-hostname-edge" data-edge="ok"`)
	r = b.APICall(t, http.MethodGet, api, key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"mode":"edge"`)
	require.Contains(t, r.Body, `"edge":{"state":"routed","pods":["10.128.0.10","10.128.1.10"]}`)
	require.Contains(t, r.Body, `"edge_status":"ok"`)
	require.Contains(t, r.Body, `"routes":{"routes":1,"in_place":1,"agents":[{"node":"host-1","state":"in_place"}`)

	// Back to direct, from the API: always allowed.
	r = b.APICall(t, http.MethodPatch, api, key, `{"managed_ingress_mode":"direct"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"mode":"direct"`)
	require.NotContains(t, r.Body, `"routes":`)

	// A Pod network shared with another cluster: edge is not offered,
	// and the page and the API say why.
	second := b.NewCluster(t, c, "second")
	_, err = b.Pool.Exec(ctx, `UPDATE clusters SET pod_cidr_pooled = false WHERE id IN ($1, $2)`, cl.ID, second.ID)
	require.NoError(t, err)
	_, err = b.Pool.Exec(ctx, `UPDATE clusters SET pod_cidr = $2 WHERE id = $1`, second.ID, cl.PodCidr)
	require.NoError(t, err)
	_, body = c.Get(panel)
	require.Contains(t, body, "is shared with another cluster")
	require.Contains(t, body, cl.PodCidr.String())
	r = b.APICall(t, http.MethodPatch, api, key, `{"managed_ingress_mode":"edge"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Contains(t, r.Body, `"code":"pod_network_shared"`)
	require.Contains(t, r.Body, cl.PodCidr.String())
}
