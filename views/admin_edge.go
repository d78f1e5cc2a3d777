package views

import (
	"strconv"
	"time"

	"github.com/a-h/templ"

	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/edge"
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
	// BaseURL is the platform's URL, for the edge's command line.
	BaseURL string
	// DNS is the DNS settings' form, and DNSCheck the result of a check
	// the admin asked for.
	DNS      Form
	DNSCheck *DNSCheck
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
