package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/queries"
)

// TestNodeRoutesRefuseInvalidNames: a node name that no Node can have is
// 404 on every node route, pages, actions and the JSON API alike, before
// the cluster is asked: this cluster's control plane cannot be reached
// (no kubeconfig Secret), which a valid name's page says.
func TestNodeRoutesRefuseInvalidNames(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "namer")
	key := c.CreateKey("names")
	cl := b.NewCluster(t, c, "names")
	b.MarkReady(t, cl)
	page := fmt.Sprintf("/clusters/%d", cl.ID)

	code, body := c.Get(page + "/nodes/worker-1")
	require.Equal(t, http.StatusOK, code, "a valid name is looked up in the cluster")
	require.Contains(t, body, `data-testid="live-unavailable"`, "which does not answer")

	for _, name := range []string{"%2e%2e", "..", "Bad_Name", "a%20b", "-lead", "x%00y"} {
		t.Run(name, func(t *testing.T) {
			node := page + "/nodes/" + name
			for _, path := range []string{node, node + "/live", node + "/drain", node + "/delete", node + "/operations/1"} {
				code, _ := c.Get(path)
				require.Equal(t, http.StatusNotFound, code, "GET %s", path)
			}
			for _, path := range []string{node + "/cordon", node + "/uncordon", node + "/drain", node + "/delete"} {
				resp := c.Post(page, path, nil)
				require.Equal(t, http.StatusNotFound, resp.StatusCode, "POST %s", path)
			}
			api := fmt.Sprintf("/api/v1/clusters/%d/nodes/%s", cl.ID, name)
			for _, call := range [][2]string{{http.MethodPost, api + "/cordon"}, {http.MethodPost, api + "/uncordon"}, {http.MethodPost, api + "/drain"}, {http.MethodDelete, api}} {
				r := b.APICall(t, call[0], call[1], key, "")
				require.Equal(t, http.StatusNotFound, r.Status, "%s %s: %s", call[0], call[1], r.Body)
				require.Contains(t, r.Body, `"error"`, "a JSON error body")
			}
		})
	}
}

// TestClusterPageEndpointAndNodePorts: the cluster page says that the API
// endpoint is what kubectl and nodes use, and shows the NodePorts as what
// the public entry forwards to.
func TestClusterPageEndpointAndNodePorts(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "porter")
	cl := b.NewCluster(t, c, "ports")
	b.MarkReady(t, cl)
	require.True(t, cl.NodePort.Valid && cl.KonnectivityNodePort.Valid)

	code, body := c.Get(fmt.Sprintf("/clusters/%d", cl.ID))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, fmt.Sprintf(`data-testid="cluster-endpoint">https://%s.clusters.test</code>`, cl.Slug))
	require.Contains(t, body, "kubectl, your kubeconfig and your nodes connect here.")
	require.Contains(t, body, "Host NodePorts (behind the endpoint)")
	require.Contains(t, body, fmt.Sprintf("https %d, konnectivity %d", cl.NodePort.Int32, cl.KonnectivityNodePort.Int32))
	require.Contains(t, body, "The public entry (HAProxy) forwards the API endpoint to these ports")
	require.NotContains(t, body, "(port ", "no bare port beside the access mode")
}

// TestClusterLoadBalancerAddress: a LoadBalancer cluster's page and API
// say that its Service has no address yet, then show the address the host
// gave it; a NodePort cluster shows none.
func TestClusterLoadBalancerAddress(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "balancer")
	key := c.CreateKey("lb")
	resp := c.CreateCluster(url.Values{"name": {"lb"}, "kubernetes_version": {"v1.34.0"}, "public_access_mode": {"loadbalancer"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	m := handlerstest.ClusterLocation.FindStringSubmatch(resp.Header.Get("Location"))
	require.NotNil(t, m)
	path := resp.Header.Get("Location")
	id, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)

	_, body := c.Get(path)
	require.Contains(t, body, `data-testid="cluster-lb-address"`)
	require.Contains(t, body, "None yet: the host cluster has not given")
	r := b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/clusters/%d", id), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"load_balancer_address":null`)

	_, err = queries.New(b.Pool).ClusterSetLBAddress(context.Background(), queries.ClusterSetLBAddressParams{ID: id, LbAddress: "203.0.113.9"})
	require.NoError(t, err)
	_, body = c.Get(path)
	require.Contains(t, body, "<code>203.0.113.9</code>")
	r = b.APICall(t, http.MethodGet, "/api/v1/clusters", key, "")
	require.Contains(t, r.Body, `"load_balancer_address":"203.0.113.9"`)

	np := b.NewCluster(t, c, "np")
	_, body = c.Get(fmt.Sprintf("/clusters/%d", np.ID))
	require.NotContains(t, body, `data-testid="cluster-lb-address"`)
}
