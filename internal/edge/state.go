package edge

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// The ports a LoadBalancer cluster's Service serves (vcluster.Values).
const (
	LoadBalancerAPIPort          = 443
	LoadBalancerKonnectivityPort = 8132
)

// Desired works out the state from the clusters, the Ready host nodes and
// the settings. A cluster is routed from its creation until it is
// deleted (but for one that failed before it was ever ready, of which
// nothing serves): in NodePort mode to every Ready host node's address of the
// admin's type at the cluster's NodePorts; in LoadBalancer mode to the
// address the host reports for its Service. A cluster without either yet
// (no ports, no address, no Ready host node) still has its route, with no
// servers: its name is known, its connections closed. Without an API base
// domain no cluster has a host name, and nothing is routed.
func Desired(ctx context.Context, q *queries.Queries, rt settings.Runtime) (edgewire.State, error) {
	var routes []edgewire.Route
	if rt.APIBaseDomain != "" {
		clusters, err := q.EdgeRoutes(ctx)
		if err != nil {
			return edgewire.State{}, fmt.Errorf("list the clusters to route: %w", err)
		}
		hosts, err := q.HostNodesReady(ctx)
		if err != nil {
			return edgewire.State{}, fmt.Errorf("list the Ready host nodes: %w", err)
		}
		var addrs []string
		for _, h := range hosts {
			if a := rt.EdgeAddress(h.InternalIp, h.ExternalIp); a != "" {
				addrs = append(addrs, a)
			}
		}
		routes = make([]edgewire.Route, 0, len(clusters))
		for _, c := range clusters {
			r := edgewire.Route{ClusterID: c.ID, Host: rt.Endpoint(c.Slug), API: []edgewire.Server{}, Konnectivity: []edgewire.Server{}}
			switch {
			case c.PublicAccessMode == settings.AccessNodePort && c.NodePort.Valid && c.KonnectivityNodePort.Valid:
				for _, a := range addrs {
					r.API = append(r.API, edgewire.Server{Address: a, Port: int(c.NodePort.Int32)})
					r.Konnectivity = append(r.Konnectivity, edgewire.Server{Address: a, Port: int(c.KonnectivityNodePort.Int32)})
				}
			case c.PublicAccessMode == settings.AccessLoadBalancer && c.LbAddress != "":
				r.API = []edgewire.Server{{Address: c.LbAddress, Port: LoadBalancerAPIPort}}
				r.Konnectivity = []edgewire.Server{{Address: c.LbAddress, Port: LoadBalancerKonnectivityPort}}
			}
			routes = append(routes, r)
		}
	}
	return edgewire.NewState(routes, consoleOf(rt))
}

// consoleOf is the console's route the settings ask for, if any.
func consoleOf(rt settings.Runtime) *edgewire.Console {
	if rt.ConsoleHost == "" || rt.ConsoleBackend == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(rt.ConsoleBackend)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil {
		return nil
	}
	return &edgewire.Console{Host: strings.ToLower(rt.ConsoleHost), Servers: []edgewire.Server{{Address: host, Port: n}}}
}
