package views

import (
	"context"
	"fmt"
	"time"

	"github.com/a-h/templ"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/settings"
)

// Cluster is a cluster as the console shows it. Zero times were never set.
type Cluster struct {
	ID                int64
	Name              string
	Description       string
	KubernetesVersion string
	AccessMode        string // "nodeport" or "loadbalancer"
	Backend           string // "vcluster" or "kamaji"
	NodePort          int32  // host NodePort of https; 0: none
	KonnectivityPort  int32  // host NodePort of konnectivity; 0: none
	LBAddress         string // LoadBalancer mode: the Service's address; "" until the host gives one
	Status            string
	StatusMessage     string
	Endpoint          string // host name, "" until ready
	// PlannedEndpoint is the address a cluster not ready yet will answer
	// at ("" where the page does not say).
	PlannedEndpoint    string
	Generation         int64
	ObservedGeneration int64
	Created            time.Time
	Ready              time.Time
	// Actions the owner may take now. A suspended cluster can be
	// deleted, not changed.
	CanRetry, CanDownload, CanChange, CanDelete bool
	// SuspendedSince is when an admin suspended the cluster, while it is
	// suspended; zero otherwise.
	SuspendedSince time.Time
	// RetryAttempt and RetryMax are, for a failed cluster that River still
	// retries (Status ClusterStatusRetrying), the attempt to come and the
	// last one; zero otherwise.
	RetryAttempt, RetryMax int
}

// ClusterStatusRetrying is the status a page shows for a failed cluster
// whose reconcile job still has attempts left: it is not failed for good.
const ClusterStatusRetrying = "retrying"

// ClusterDelete is the page that confirms deleting Cluster; Nodes are the
// names of the machines recorded as joined to it.
type ClusterDelete struct {
	Cluster Cluster
	Nodes   []string
}

// clusterDeleteNodesShown is how many joined machines the delete page names.
const clusterDeleteNodesShown = 10

// ClusterEvent is one step of a cluster's timeline.
type ClusterEvent struct {
	ID      int64
	Level   string // "info", "warning" or "error"
	Reason  string // names the message ClusterEvent<Reason>
	Message string // technical detail, may be empty
	Time    time.Time
	// Count is how many times it happened (1: once); LastSeen the last
	// time, when more than once.
	Count    int32
	LastSeen time.Time
}

// ClusterList is one page of the user's clusters.
type ClusterList struct {
	Clusters []Cluster
	// NextURL is the next (older) page, FirstURL the newest one; empty
	// when there is none to go to.
	NextURL  string
	FirstURL string
	// Sort is the order the reader chose, by a column's header.
	Sort Sort
}

// ClusterDetail is the page of one cluster.
type ClusterDetail struct {
	Cluster Cluster
	Events  []ClusterEvent
	// Reasons are those the cluster's events gave, for its provisioning
	// steps (while it is made).
	Reasons []string
	// Live makes the page ask for new events until the cluster settles.
	Live bool
	// UnreachableSince is when the platform last reached the cluster's
	// control plane, while it does not answer; zero otherwise.
	UnreachableSince time.Time
	UnreachableError string
	// FirstNode is the "Add your first node" card, shown while a ready
	// cluster has no node; nil otherwise.
	FirstNode *FirstNode
	// Timeline is the Events tab, which shows the events alone: its live
	// updates bring no state or progress to swap.
	Timeline bool
}

// ClusterUpdates is what the live detail page receives: the new events,
// the cluster's state, and whether to keep asking.
type ClusterUpdates struct {
	Cluster Cluster
	Events  []ClusterEvent
	// Reasons are those the cluster's events gave, for its provisioning
	// steps (while it is made).
	Reasons []string
	// After is the last event the page has now.
	After int64
	Done  bool
	// Timeline: for the Events tab, the events without the state.
	Timeline bool
}

// ClusterForm is the create or edit form. Cluster is set when editing.
type ClusterForm struct {
	Form     Form
	Versions []string
	Cluster  *Cluster
	// StaleCleanupHours is the stale-node clean-up period ("" when off),
	// in the edit form's Settings tab.
	StaleCleanupHours string
	// NoLicense says that no vCluster Platform connection licenses
	// private nodes.
	NoLicense bool
	// Backends are the control-plane backends to choose from, when the
	// plan allows more than one (create form only).
	Backends []string
}

const clustersPath = "/clusters"

// clusterPath is the page of a cluster, or one of its sub-pages.
func clusterPath(id int64, sub string) string {
	p := fmt.Sprintf("%s/%d", clustersPath, id)
	if sub != "" {
		p += "/" + sub
	}
	return p
}

// ClusterPath is the page of a cluster, or one of its sub-pages, for the
// handlers.
func ClusterPath(id int64, sub string) string {
	return clusterPath(id, sub)
}

func clusterURL(id int64, sub string) templ.SafeURL {
	return templ.SafeURL(clusterPath(id, sub))
}

// clusterStreamPath is the live page's stream of the events after after
// (server-sent events); it resumes from the last it sent (Last-Event-ID).
func clusterStreamPath(id, after int64, timeline bool) string {
	return fmt.Sprintf("%s?after=%d%s", clusterPath(id, "stream"), after, timelineParam(timeline))
}

// clusterEventsPath is where the live page asks for events after after.
func clusterEventsPath(id, after int64, timeline bool) string {
	return fmt.Sprintf("%s?after=%d%s", clusterPath(id, "events"), after, timelineParam(timeline))
}

// timelineParam asks the live updates for the Events tab's part alone.
func timelineParam(timeline bool) string {
	if timeline {
		return "&only=events"
	}
	return ""
}

// lastEventID is the id of the newest event shown, 0 for none.
func lastEventID(events []ClusterEvent) int64 {
	if len(events) == 0 {
		return 0
	}
	return events[len(events)-1].ID
}

func clusterStatusMsg(status string) string {
	switch status {
	case clusters.StatusPending:
		return "ClusterStatusPending"
	case clusters.StatusProvisioning:
		return "ClusterStatusProvisioning"
	case clusters.StatusReady:
		return "ClusterStatusReady"
	case clusters.StatusUpdating:
		return "ClusterStatusUpdating"
	case clusters.StatusFailed:
		return "ClusterStatusFailed"
	case clusters.StatusDeleting:
		return "ClusterStatusDeleting"
	case clusters.StatusSuspended:
		return "ClusterStatusSuspended"
	case clusters.StatusResuming:
		return "ClusterStatusResuming"
	case ClusterStatusRetrying:
		return "ClusterStatusRetrying"
	}
	return "ClusterStatusDeleted"
}

func clusterAccessMsg(mode string) string {
	if mode == settings.AccessLoadBalancer {
		return "ClusterAccessLoadBalancer"
	}
	return "ClusterAccessNodePort"
}

// clusterEndpoint is the API server's address, or a note that it has none.
func clusterEndpoint(ctx context.Context, c Cluster) string {
	switch {
	case c.Endpoint != "":
		return "https://" + c.Endpoint
	case c.PlannedEndpoint != "":
		return "https://" + c.PlannedEndpoint
	}
	return locale.T(ctx, "ClusterNoEndpoint")
}

// clusterNodePorts lists the cluster's host NodePorts by what they carry.
func clusterNodePorts(ctx context.Context, c Cluster) string {
	s := locale.T(ctx, "ClusterNodePortHTTPS", map[string]any{"Port": c.NodePort})
	if c.KonnectivityPort != 0 {
		s += ", " + locale.T(ctx, "ClusterNodePortKonnectivity", map[string]any{"Port": c.KonnectivityPort})
	}
	return s
}

// clusterTime shows a time in UTC, or a dash for the zero time.
func clusterTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func clusterISOTime(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}

func clusterFormTitle(ctx context.Context, m ClusterForm) string {
	if m.Cluster == nil {
		return locale.T(ctx, "ClusterNewTitle")
	}
	return locale.T(ctx, "ClusterEditTitle", map[string]any{"Name": m.Cluster.Name})
}

func clusterFormSubmit(ctx context.Context, m ClusterForm) string {
	if m.Cluster == nil {
		return locale.T(ctx, "ClustersCreate")
	}
	return locale.T(ctx, "ClusterEditSubmit")
}

func clusterFormAction(m ClusterForm) templ.SafeURL {
	if m.Cluster == nil {
		return templ.SafeURL(clustersPath)
	}
	return clusterURL(m.Cluster.ID, "edit")
}

func clusterFormCancel(m ClusterForm) templ.SafeURL {
	if m.Cluster == nil {
		return templ.SafeURL(clustersPath)
	}
	return clusterURL(m.Cluster.ID, "")
}

// ClusterEndpoint is the cluster page's endpoint panel: the API host
// name, its DNS record, and what the edges say of the cluster.
type ClusterEndpoint struct {
	ClusterID int64
	Deleted   bool
	Name      string
	// DNSMode is the admin's DNS mode; DNSState the record's state
	// (published, pending, error) or, where the platform writes none,
	// the mode (none, wildcard).
	DNSMode, DNSState, DNSError string
	DNSAddresses                []string
	Edges                       []EdgeReach
}

// EdgeReach is what one edge says of the cluster.
type EdgeReach struct {
	Edge            string
	InStep, Reached bool
	Up, Down        int
}
