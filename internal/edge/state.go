package edge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// The ports a LoadBalancer cluster's Service serves (vcluster.Values).
const (
	LoadBalancerAPIPort          = 443
	LoadBalancerKonnectivityPort = 8132
)

// State is what every edge should route: the desired configuration that
// GET /api/v1/edge/config serves and `kubebyon edge` renders.
type State struct {
	// Version names the state: a hash of the routes, so that it changes
	// exactly when they do.
	Version string  `json:"version"`
	Routes  []Route `json:"routes"`
}

// Desired works out the state from the clusters, the Ready host nodes and
// the settings. A cluster is routed from its creation until it is
// deleted: in NodePort mode to every Ready host node's address of the
// admin's type at the cluster's NodePorts; in LoadBalancer mode to the
// address the host reports for its Service. A cluster without either yet
// (no ports, no address, no Ready host node) still has its route, with no
// servers: its name is known, its connections closed. Without an API base
// domain no cluster has a host name, and nothing is routed.
func Desired(ctx context.Context, q *queries.Queries, rt settings.Runtime) (State, error) {
	var routes []Route
	if rt.APIBaseDomain != "" {
		clusters, err := q.EdgeRoutes(ctx)
		if err != nil {
			return State{}, fmt.Errorf("list the clusters to route: %w", err)
		}
		hosts, err := q.HostNodesReady(ctx)
		if err != nil {
			return State{}, fmt.Errorf("list the Ready host nodes: %w", err)
		}
		var addrs []string
		for _, h := range hosts {
			a := h.InternalIp
			if rt.EdgeAddressType == settings.AddressExternalIP {
				a = h.ExternalIp
			}
			if a != "" {
				addrs = append(addrs, a)
			}
		}
		routes = make([]Route, 0, len(clusters))
		for _, c := range clusters {
			r := Route{ClusterID: c.ID, Host: rt.Endpoint(c.Slug), API: []Server{}, Konnectivity: []Server{}}
			switch {
			case c.PublicAccessMode == settings.AccessNodePort && c.NodePort.Valid && c.KonnectivityNodePort.Valid:
				for _, a := range addrs {
					r.API = append(r.API, Server{Address: a, Port: int(c.NodePort.Int32)})
					r.Konnectivity = append(r.Konnectivity, Server{Address: a, Port: int(c.KonnectivityNodePort.Int32)})
				}
			case c.PublicAccessMode == settings.AccessLoadBalancer && c.LbAddress != "":
				r.API = []Server{{Address: c.LbAddress, Port: LoadBalancerAPIPort}}
				r.Konnectivity = []Server{{Address: c.LbAddress, Port: LoadBalancerKonnectivityPort}}
			}
			routes = append(routes, r)
		}
	}
	return newState(routes)
}

// newState names routes with their version.
func newState(routes []Route) (State, error) {
	if routes == nil {
		routes = []Route{}
	}
	b, err := json.Marshal(routes)
	if err != nil {
		return State{}, fmt.Errorf("encode the routes: %w", err)
	}
	sum := sha256.Sum256(b)
	return State{Version: hex.EncodeToString(sum[:8]), Routes: routes}, nil
}
