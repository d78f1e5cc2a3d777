package views

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
)

// JoinTokens is a cluster's join tokens page.
type JoinTokens struct {
	Cluster Cluster
	// Ready says tokens can be made (the cluster is ready). Suspended
	// says why not when an admin suspended the cluster.
	Ready, Suspended bool
	Tokens           []JoinToken
	Form             Form
	// LoopbackBaseURL is the base URL the join commands are made from,
	// when it names the platform's machine only; else empty.
	LoopbackBaseURL string
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
	Nodes   []JoinedNode
	// Events are the token's newest join diagnostics, newest first.
	Events []JoinEvent
	// Live says the page keeps asking for the token's news: while it can
	// be used, and for a while after its last use.
	Live bool
}

// JoinedNode is a node that joined with a token.
type JoinedNode struct {
	Name string
	// Registered says its Node object was seen (not only its CSR).
	Registered bool
}

// JoinEvent is one step a join script reported.
type JoinEvent struct {
	Host     string
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

func joinTokenLivePath(clusterID, id int64) string {
	return fmt.Sprintf("/clusters/%d/tokens/%d/live", clusterID, id)
}

func joinTokenLiveID(id int64) string {
	return fmt.Sprintf("join-token-live-%d", id)
}

func joinCommandBlockID(id int64) string {
	return fmt.Sprintf("join-command-block-%d", id)
}

// InStatus are d's tokens of one status (a jointokens.Status), newest
// first.
func (d JoinTokens) InStatus(status string) []JoinToken {
	var out []JoinToken
	for _, t := range d.Tokens {
		if t.Status == status {
			out = append(out, t)
		}
	}
	return out
}

// anyLive reports whether the page still watches one of tokens.
func anyLive(tokens []JoinToken) bool {
	for _, t := range tokens {
		if t.Live {
			return true
		}
	}
	return false
}

// liveTokenIDs are the ids of the live tokens among tokens, joined by
// commas, for their stream's URL; "" when none is live.
func liveTokenIDs(tokens []JoinToken) string {
	var ids []string
	for _, t := range tokens {
		if t.Live {
			ids = append(ids, strconv.FormatInt(t.ID, 10))
		}
	}
	return strings.Join(ids, ",")
}
