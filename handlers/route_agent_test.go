//go:build linux

package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/routeagent"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestRouteAgentThroughThePlatform runs the real route agent, in a network
// namespace of the test's own standing for a host node, against the real
// API: a cluster in edge mode gets a route to its Ready node's Pod CIDR
// in that namespace's table within moments, the cluster's panel counts
// the host node in place, and the route goes when the node is NotReady.
func TestRouteAgentThroughThePlatform(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	ctx := context.Background()
	q := queries.New(b.Pool)
	c, _ := b.SignedUpUser(t, "routeagent")
	cl := b.NewCluster(t, c, "edge")
	b.SetIngressSettings(t)
	st, err := ingress.LoadSettings(ctx, q)
	require.NoError(t, err)
	st.GatewayClass = "eg"
	require.NoError(t, ingress.SaveSettings(ctx, q, st))
	_, err = b.Pool.Exec(ctx, `INSERT INTO cluster_ingress (cluster_id, enabled, mode) VALUES ($1, true, 'edge')`, cl.ID)
	require.NoError(t, err)

	// The host node reaches the tenant's nodes on 192.168.50.0/24.
	_, h := testenv.NetNamespace(t)
	require.NoError(t, h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "tenants"}, PeerName: "tenantsp"}))
	for _, name := range []string{"tenantsp", "tenants"} {
		link, err := h.LinkByName(name)
		require.NoError(t, err)
		require.NoError(t, h.LinkSetUp(link))
	}
	link, err := h.LinkByName("tenants")
	require.NoError(t, err)
	addr, err := netlink.ParseAddr("192.168.50.1/24")
	require.NoError(t, err)
	require.NoError(t, h.AddrAdd(link, addr))

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- (&routeagent.Runner{
			Platform: &routeagent.Remote{URL: b.Server.URL, Token: b.EdgeToken(t, "hosts").Value, Client: b.Server.Client()},
			Node:     "host-1", Agent: &routeagent.Agent{Handle: h}, Wait: 5 * time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}).Run(runCtx)
	}()
	t.Cleanup(func() { stop(); require.NoError(t, <-done) })

	routes := func() []string {
		krs, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: routeagent.Protocol}, netlink.RT_FILTER_PROTOCOL)
		require.NoError(t, err)
		var out []string
		for _, r := range krs {
			out = append(out, r.Dst.String()+" via "+r.Gw.String())
		}
		return out
	}
	dst := handlerstest.PodSubnet(t, cl, 0)
	b.RoutedNode(t, cl, "worker-a", true, dst, "192.168.50.7")
	require.Eventually(t, func() bool {
		got := routes()
		return len(got) == 1 && got[0] == dst+" via 192.168.50.7"
	}, 30*time.Second, 50*time.Millisecond, "the route lands in the host node's table")
	panel := fmt.Sprintf("/clusters/%d/ingress", cl.ID)
	require.Eventually(t, func() bool {
		_, body := c.Get(panel)
		return strings.Contains(body, "In place on 1 of 1 host nodes (1 routes).")
	}, 30*time.Second, 100*time.Millisecond, "the panel counts the host node in place")

	b.RoutedNode(t, cl, "worker-a", false, dst, "192.168.50.7")
	require.Eventually(t, func() bool { return len(routes()) == 0 }, 30*time.Second, 50*time.Millisecond, "a NotReady node's route goes")
	r := b.APICall(t, http.MethodGet, "/api/v1/edge/routes", b.EdgeToken(t, "reader").Value, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"routes":[]`)
}
