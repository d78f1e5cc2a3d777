package views

import (
	"fmt"
	"time"

	"github.com/a-h/templ"
)

// JoinTokens is a cluster's join tokens page.
type JoinTokens struct {
	ClusterID   int64
	ClusterName string
	// Ready says tokens can be made (the cluster is ready).
	Ready  bool
	Tokens []JoinToken
	Events []JoinEvent
	Form   Form
}

// JoinToken is one token as the console shows it.
type JoinToken struct {
	ID          int64
	TokenID     string
	Description string
	Status      string
	Uses        int32
	// MaxUses is 0 for unlimited.
	MaxUses int32
	Expires time.Time
	// Command is the join command while the token is active.
	Command string
	Nodes   []string
}

// JoinEvent is one step a join script reported.
type JoinEvent struct {
	TokenID  string
	Step     string
	Status   string
	Message  string
	ClientIP string
	Time     time.Time
}

func joinTokensURL(clusterID int64) templ.SafeURL {
	return templ.SafeURL(fmt.Sprintf("/clusters/%d/tokens", clusterID))
}

func joinTokenRevokeURL(clusterID, id int64) templ.SafeURL {
	return templ.SafeURL(fmt.Sprintf("/clusters/%d/tokens/%d/revoke", clusterID, id))
}

func joinDiagnosticsPath(clusterID int64) string {
	return fmt.Sprintf("/clusters/%d/tokens/diagnostics", clusterID)
}
