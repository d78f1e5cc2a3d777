// Package edgewire holds what travels over the platform's edge API
// (/api/v1/edge/...) between the platform (package edge) and the programs
// that run beside it with an edge token: the edges of `kubebyon edge`
// (package edgeagent), which fetch the State their HAProxy should route
// and send a Report, and the route agents of `kubebyon route-agent`
// (package routeagent), which fetch the TenantRoutes their host should
// keep and send a RouteReport. It holds the types and the limits the
// platform holds a report to, nothing that runs, so that each side
// imports it and neither the other.
package edgewire

// MaxReportText bounds every free text of a report, an edge's or a route
// agent's, in bytes: the platform refuses a report with a longer one
// whole.
const MaxReportText = 4000
