package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/queries"
)

// TestNodeRoutesRefuseInvalidNames: a node name that no Node can have is
// 404 on every node route, pages, actions and the JSON API alike, before
// the cluster is asked: this cluster's control plane cannot be reached
// (no kubeconfig Secret), which would otherwise answer 502.
func TestNodeRoutesRefuseInvalidNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	c, _ := b.signedUpUser(t, "namer")
	key := c.createKey("names")
	cl := b.newCluster(t, c, "names")
	b.markReady(t, cl)
	page := fmt.Sprintf("/clusters/%d", cl.ID)

	code, _ := c.get(page + "/nodes/worker-1")
	require.Equal(t, http.StatusBadGateway, code, "a valid name is looked up in the cluster")

	for _, name := range []string{"%2e%2e", "..", "Bad_Name", "a%20b", "-lead", "x%00y"} {
		t.Run(name, func(t *testing.T) {
			node := page + "/nodes/" + name
			for _, path := range []string{node, node + "/live", node + "/drain", node + "/delete", node + "/operations/1"} {
				code, _ := c.get(path)
				require.Equal(t, http.StatusNotFound, code, "GET %s", path)
			}
			for _, path := range []string{node + "/cordon", node + "/uncordon", node + "/drain", node + "/delete"} {
				resp := c.post(page, path, nil)
				require.Equal(t, http.StatusNotFound, resp.StatusCode, "POST %s", path)
			}
			api := fmt.Sprintf("/api/v1/clusters/%d/nodes/%s", cl.ID, name)
			for _, call := range [][2]string{{http.MethodPost, api + "/cordon"}, {http.MethodPost, api + "/uncordon"}, {http.MethodPost, api + "/drain"}, {http.MethodDelete, api}} {
				r := b.apiCall(t, call[0], call[1], key, "")
				require.Equal(t, http.StatusNotFound, r.status, "%s %s: %s", call[0], call[1], r.body)
				require.Contains(t, r.body, `"error"`, "a JSON error body")
			}
		})
	}
}

// TestClusterPageEndpointAndNodePorts: the cluster page says that the API
// endpoint is what kubectl and nodes use, and shows the NodePorts as what
// the public entry forwards to.
func TestClusterPageEndpointAndNodePorts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	c, _ := b.signedUpUser(t, "porter")
	cl := b.newCluster(t, c, "ports")
	b.markReady(t, cl)
	require.True(t, cl.NodePort.Valid && cl.KonnectivityNodePort.Valid)

	code, body := c.get(fmt.Sprintf("/clusters/%d", cl.ID))
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
	b := setup(t)
	b.connectHost(t)
	c, _ := b.signedUpUser(t, "balancer")
	key := c.createKey("lb")
	resp := c.createCluster(url.Values{"name": {"lb"}, "kubernetes_version": {"v1.34.0"}, "public_access_mode": {"loadbalancer"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	m := clusterLocation.FindStringSubmatch(resp.Header.Get("Location"))
	require.NotNil(t, m)
	path := resp.Header.Get("Location")
	id, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)

	_, body := c.get(path)
	require.Contains(t, body, `data-testid="cluster-lb-address"`)
	require.Contains(t, body, "None yet: the host cluster has not given")
	r := b.apiCall(t, http.MethodGet, fmt.Sprintf("/api/v1/clusters/%d", id), key, "")
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Contains(t, r.body, `"load_balancer_address":null`)

	_, err = queries.New(b.pool).ClusterSetLBAddress(context.Background(), queries.ClusterSetLBAddressParams{ID: id, LbAddress: "203.0.113.9"})
	require.NoError(t, err)
	_, body = c.get(path)
	require.Contains(t, body, "<code>203.0.113.9</code>")
	r = b.apiCall(t, http.MethodGet, "/api/v1/clusters", key, "")
	require.Contains(t, r.body, `"load_balancer_address":"203.0.113.9"`)

	np := b.newCluster(t, c, "np")
	_, body = c.get(fmt.Sprintf("/clusters/%d", np.ID))
	require.NotContains(t, body, `data-testid="cluster-lb-address"`)
}
