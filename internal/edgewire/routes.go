package edgewire

// TenantRoutes is the platform's answer to GET /api/v1/edge/routes: every
// route the host nodes should keep, under an opaque version (a hash of
// them).
type TenantRoutes struct {
	Version string        `json:"version"`
	Routes  []TenantRoute `json:"routes"`
}

// TenantRoute is a route every host node keeps, so that the shared
// Gateway reaches a tenant's pods: Dst is a tenant node's Pod CIDR and Via
// its address, both still text.
type TenantRoute struct {
	ClusterID int64  `json:"cluster_id"`
	Node      string `json:"node"`
	Dst       string `json:"dst"`
	Via       string `json:"via"`
}

// RouteReport is a route agent's report of one converge, for POST
// /api/v1/edge/routes/status.
type RouteReport struct {
	// Node is the host node the agent runs on.
	Node string `json:"node"`
	// Version is the version of the routes converged to.
	Version  string `json:"version"`
	InPlace  int    `json:"in_place"`
	Added    int    `json:"added"`
	Replaced int    `json:"replaced"`
	Removed  int    `json:"removed"`
	// Failed says by destination why a route is not in place.
	Failed map[string]string `json:"failed"`
	// Error is what stopped the whole converge, or empty.
	Error string `json:"error"`
}

// The platform refuses a route report beyond these limits (and
// MaxReportText) whole.
const (
	// MaxReportedFailures bounds the failures a report lists,
	// MaxReportDst a destination's length.
	MaxReportedFailures = 1000
	MaxReportDst        = 64
)
