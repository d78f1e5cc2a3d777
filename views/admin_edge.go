package views

import (
	"strconv"
	"time"

	"github.com/a-h/templ"

	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/ingress"
)

// AdminEdge is the edge page: what every edge should serve, the edges as
// they last reported, and the edge tokens.
type AdminEdge struct {
	// Version and Routes are the desired state.
	Version   string
	Routes    int
	Instances []EdgeInstance
	Tokens    []EdgeToken
	// Form is the new token's form.
	Form Form
	// Confirm is how the admin confirms a change of the DNS secret.
	Confirm AdminConfirm
	// BaseURL is the platform's URL, for the edge's command line.
	BaseURL string
	// DNS is the DNS settings' form, and DNSCheck the result of a check
	// the admin asked for.
	DNS      Form
	DNSCheck *DNSCheck
	// Ingress is the managed ingress settings' form.
	Ingress AdminIngress
	// RoutesVersion and TenantRoutes are the route agents' desired
	// routes; RouteAgents the agents that reported in the last day.
	RoutesVersion string
	TenantRoutes  int
	RouteAgents   []RouteAgentRow
}

// RouteAgentRow is one host node's route agent as it last reported.
type RouteAgentRow struct {
	Node, Token, Address string
	// InStep: it applied the current routes.
	InStep                            bool
	InPlace, Added, Replaced, Removed int
	// Failed counts the routes it could not apply; LastError what stopped
	// its last run.
	Failed    int
	LastError string
	LastSeen  time.Time
	// Stale: silent for longer than edge.RouteAgentsFresh.
	Stale bool
}

// AdminIngress is the managed ingress settings' form, and the controller
// stored now (which the retired warning names even while another is
// being picked).
type AdminIngress struct {
	Form   Form
	Stored string
}

// Controller is the controller the form shows picked.
func (a AdminIngress) Controller() string { return a.Form.Value("controller") }

// Retired reports whether the picked or the stored controller is one
// upstream no longer maintains.
func (a AdminIngress) Retired() bool {
	return ingress.Retired(a.Controller()) || ingress.Retired(a.Stored)
}

// ChartDefault is the picked controller's default chart (Traefik's when
// the form names none it knows), for the placeholders.
func (a AdminIngress) ChartDefault() ingress.ChartSource {
	if src, ok := ingress.DefaultCharts[a.Controller()]; ok {
		return src
	}
	return ingress.DefaultCharts[ingress.Traefik]
}

// DNSCheck is what a DNS check found.
type DNSCheck struct {
	OK bool
	// Name is the random name a wildcard check looked up, and Found the
	// addresses it resolved to.
	Name  string
	Found []string
	// Detail says what is wrong, in the DNS server's or resolver's words;
	// Error is a catalog message ID (no mode to check).
	Detail string
	Error  string
}

// EdgeInstance is an edge as it last reported.
type EdgeInstance struct {
	Name, Token, Address, HAProxyVersion, Applied string
	// InStep says whether it serves the desired version.
	InStep bool
	// Stale says it has not reported for longer than EdgeStaleAfter.
	Stale     bool
	LastSeen  time.Time
	Up, Down  int
	LastError string
}

// dnsModes and dnsAlgorithms are the DNS form's choices.
var (
	dnsModes      = dnsrecords.Modes
	dnsAlgorithms = dnsrecords.Algorithms
)

// The managed ingress form's choices: the controllers, and the ACME
// servers its hint names.
var (
	ingressControllers    = ingress.Controllers
	letsEncryptProduction = ingress.LetsEncryptProduction
	letsEncryptStaging    = ingress.LetsEncryptStaging
	certManagerVersion    = ingress.CertManagerChart.Version
)

// EdgeStaleAfter is how long an edge may go without reporting before the
// page says so.
const EdgeStaleAfter = edge.StaleAfter

// EdgeToken is an edge token as the admin sees it (never its value).
type EdgeToken struct {
	ID           int64
	Name, Prefix string
	Created      time.Time
	LastUsed     time.Time // zero: never
	Revoked      bool
}

func edgeRevokePath(id int64) templ.SafeURL {
	return templ.SafeURL("/admin/edge/tokens/" + strconv.FormatInt(id, 10) + "/revoke")
}

// shortVersion is a version as the page shows it.
func shortVersion(v string) string {
	if v == "" {
		return "—"
	}
	return v
}
