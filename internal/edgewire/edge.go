package edgewire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

// Route is one cluster's entry: its API host name and where its apiserver
// and its konnectivity server answer. A route without servers is still
// known: its connections are accepted and closed, not refused as unknown.
type Route struct {
	ClusterID    int64    `json:"cluster_id"`
	Host         string   `json:"host"`
	API          []Server `json:"api"`
	Konnectivity []Server `json:"konnectivity"`
}

// Server is one address a backend sends connections to.
type Server struct {
	Address string `json:"address"` // an IP address or a DNS name
	Port    int    `json:"port"`
}

// Console is the console's route: its host name and its HTTPS servers.
type Console struct {
	Host    string   `json:"host"`
	Servers []Server `json:"servers"`
}

// NewState names routes and the console's with their version.
func NewState(routes []Route, console *Console) (State, error) {
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

// Report is what an edge says about itself (POST /api/v1/edge/status).
type Report struct {
	// Name tells apart the instances that share a token (their host
	// names, by default).
	Name           string `json:"name"`
	HAProxyVersion string `json:"haproxy_version"`
	AppliedVersion string `json:"applied_version"`
	// BackendsUp counts the backends whose every server is up,
	// BackendsDown those with a server down; Down lists the latter (a
	// backend without servers is neither).
	BackendsUp   int       `json:"backends_up"`
	BackendsDown int       `json:"backends_down"`
	Down         []Backend `json:"down"`
	LastError    string    `json:"last_error"`
}

// Backend is one backend's health as an edge's HAProxy reports it.
type Backend struct {
	ClusterID int64 `json:"cluster_id"`
	// Kind is "api" or "konnectivity".
	Kind string `json:"backend"`
	// Up and Down count the backend's servers by their check.
	Up   int `json:"up"`
	Down int `json:"down"`
}

// MaxDown bounds the backends a report lists: an edge whose every backend
// is down lists the first MaxDown (BackendsDown counts them all).
const MaxDown = 1000
