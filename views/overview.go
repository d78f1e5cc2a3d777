package views

import (
	"fmt"
	"time"

	"github.com/a-h/templ"
)

// Overview is the signed-in user's home page: the organization's figures,
// its newest clusters, their newest events, the user's newest
// notifications, and the first-run checklist.
type Overview struct {
	// Name is the user's, for the greeting.
	Name string
	// Live clusters by state (InProgress: being made, changed, resumed or
	// deleted).
	Clusters, Ready, InProgress, Failed int64
	// Nodes as the health job last saw them; MostNodes is the fullest
	// cluster's count, against the plan's MaxNodes per cluster.
	Nodes, NodesReady, MostNodes int64
	Plan                         string
	MaxClusters, MaxNodes        int32
	Unread                       int64
	List                         []OverviewCluster
	Events                       []OverviewEvent
	Notifications                []OverviewNotification
	Checklist                    []ChecklistItem
}

// OverviewCluster is a cluster in the overview's list.
type OverviewCluster struct {
	ID                int64
	Name, Status      string
	Nodes, NodesReady int64
}

// OverviewEvent is one of the newest events across the clusters.
type OverviewEvent struct {
	ClusterID   int64
	ClusterName string
	Level       string // "info", "warning" or "error"
	Reason      string // names the message ClusterEvent<Reason>
	Time        time.Time
}

// OverviewNotification is one of the user's newest notifications, with
// the page of its object (its cluster's, else the inbox).
type OverviewNotification struct {
	Title  string
	Href   templ.SafeURL
	Time   time.Time
	Unread bool
}

// ChecklistItem is a step of a first-run checklist: its message (Label,
// a catalog id), whether real state shows it done, and the page where it
// is done.
type ChecklistItem struct {
	Label  string
	Done   bool
	Href   templ.SafeURL
	TestID string
}

// ChecklistDone counts the items done.
func ChecklistDone(items []ChecklistItem) int {
	n := 0
	for _, it := range items {
		if it.Done {
			n++
		}
	}
	return n
}

// UserChecklist is a new user's first steps, each done when the state
// shows it: a cluster, a join token in one, a node joined, a kubeconfig
// downloaded. The steps after the first lead to the pages of cluster
// (0: none yet, which leads to the create form).
func UserChecklist(cluster int64, hasCluster, hasToken, hasNode, downloaded bool) []ChecklistItem {
	at := func(sub string) templ.SafeURL {
		if cluster == 0 {
			return "/clusters/new"
		}
		return clusterURL(cluster, sub)
	}
	return []ChecklistItem{
		{Label: "OverviewStepCluster", Done: hasCluster, Href: "/clusters/new", TestID: "checklist-cluster"},
		{Label: "OverviewStepToken", Done: hasToken, Href: at("tokens"), TestID: "checklist-token"},
		{Label: "OverviewStepNode", Done: hasNode, Href: at("tokens"), TestID: "checklist-node"},
		{Label: "OverviewStepKubeconfig", Done: downloaded, Href: at(""), TestID: "checklist-kubeconfig"},
	}
}

// AdminOverview is the admin's home page: the platform at a glance, its
// open notices and the operator's first-run checklist.
type AdminOverview struct {
	Users, UsersDisabled                           int64
	Clusters, Ready, InProgress, Failed, Suspended int64
	Nodes, NodesReady                              int64
	// Jobs that failed and will run again, failed for good lately, and
	// wait to run.
	JobsRetrying, JobsDiscarded, JobsQueued int64
	// Edges reporting, and those serving the desired routes.
	Edges, EdgesInStep int
	Notices            []AdminNotice
	Checklist          []ChecklistItem
}

// AdminNotice is something about the platform an operator should act on:
// a message of the catalog with its values, and the page that fixes it.
type AdminNotice struct {
	Message string
	Data    map[string]any
	Href    templ.SafeURL
}

// countOf is "n of max", or n alone when max is none.
func countOf(n int64, max int32) string {
	if max <= 0 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d / %d", n, max)
}
