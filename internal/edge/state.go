package edge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

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
	// Console, when the admin sets it, passes the console's own host name
	// through to the console's HTTPS servers on the API port, so that one
	// public address serves both.
	Console *Console `json:"console,omitempty"`
}

// Console is the console's route: its host name and its HTTPS servers.
type Console struct {
	Host    string   `json:"host"`
	Servers []Server `json:"servers"`
}

// Desired works out the state from the clusters, the Ready host nodes and
// the settings. A cluster is routed from its creation until it is
// deleted (but for one that failed before it was ever ready, of which
// nothing serves): in NodePort mode to every Ready host node's address of the
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
			if a := rt.EdgeAddress(h.InternalIp, h.ExternalIp); a != "" {
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
	return newState(routes, consoleOf(rt))
}

// consoleOf is the console's route the settings ask for, if any.
func consoleOf(rt settings.Runtime) *Console {
	if rt.ConsoleHost == "" || rt.ConsoleBackend == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(rt.ConsoleBackend)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil {
		return nil
	}
	return &Console{Host: strings.ToLower(rt.ConsoleHost), Servers: []Server{{Address: host, Port: n}}}
}

// newState names routes and the console's with their version.
func newState(routes []Route, console *Console) (State, error) {
	if routes == nil {
		routes = []Route{}
	}
	// Routes alone are hashed as they were before the console could be
	// routed, so that their version stays what it was.
	var v any = routes
	if console != nil {
		v = struct {
			Routes  []Route  `json:"routes"`
			Console *Console `json:"console"`
		}{routes, console}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return State{}, fmt.Errorf("encode the routes: %w", err)
	}
	sum := sha256.Sum256(b)
	return State{Version: hex.EncodeToString(sum[:8]), Routes: routes, Console: console}, nil
}
