package views

import (
	"strconv"
	"time"

	"github.com/a-h/templ"
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

// EdgeStaleAfter is how long an edge may go without reporting before the
// page says so: it reports after every poll, at least every half minute.
const EdgeStaleAfter = 2 * time.Minute

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
