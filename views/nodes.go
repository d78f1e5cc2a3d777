package views

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/a-h/templ"

	"github.com/kubebyon/kubebyon/internal/locale"
)

// Node is a node as the console lists it.
type Node struct {
	Name           string
	Status         string // "Ready", "NotReady" or "Unknown"
	Unschedulable  bool
	Roles          []string
	KubeletVersion string
	OS, Arch       string
	InternalIP     string
	ExternalIP     string
	Created        time.Time
	// JoinedWith names the join token the node joined with, if known.
	JoinedWith string
}

// NodeList is the nodes page of a cluster: its nodes as last recorded.
// Error is the catalog message shown instead of them (a cluster not ready).
type NodeList struct {
	Cluster Cluster
	Nodes   []Node
	Error   string
	// Updated is when the nodes were last recorded from the cluster (zero:
	// never), as of Now.
	Updated, Now time.Time
	// UnreachableSince is since when the platform has not reached the
	// cluster's control plane (zero while it does), UnreachableError why.
	UnreachableSince time.Time
	UnreachableError string
	// NodeQuota is what the owner's plan allows of the cluster's nodes.
	NodeQuota NodeQuota
	// FirstNode is the "Add your first node" card, shown while the
	// cluster has no node; nil otherwise.
	FirstNode *FirstNode
	// Sort is the order the reader chose, by a column's header; the rows'
	// refresh keeps it.
	Sort Sort
}

// NodeCondition is one condition of a node.
type NodeCondition struct {
	Type, Status, Reason, Message string
	Time                          time.Time
}

// NodeResource is a resource's capacity and what pods can have of it.
type NodeResource struct {
	Name, Capacity, Allocatable string
}

// NodePod is a pod on a node.
type NodePod struct {
	Namespace, Name, Phase string
	// Ready of Containers are ready; Restarts counts their restarts.
	Ready, Containers int
	Restarts          int32
	Created           time.Time
	Age               time.Duration
}

// NodeDetail is the page of one node.
type NodeDetail struct {
	Cluster Cluster
	// Live is the part of the page that refreshes itself.
	Live NodeLive
	// Operation is the node's latest drain or deletion, if any.
	Operation *NodeOperation
	// Ingress is the node's managed ingress form: whether it is an
	// ingress node, and its public address.
	Ingress Form
}

// NodeOperation is a drain or deletion and its progress.
type NodeOperation struct {
	ID        int64
	ClusterID int64
	NodeName  string
	Kind      string // "drain" or "delete"
	Status    string // "running", "succeeded" or "failed"
	Message   string
	Progress  []string
	Updated   time.Time
	// Done says the operation has finished.
	Done bool
	// Interrupted says its worker stopped before it finished
	// (nodes.OperationInterrupted): the page says so in the reader's
	// language, not Message.
	Interrupted bool
	// ResetCommand cleans the host of a deleted node: set once a deletion
	// has succeeded, empty otherwise.
	ResetCommand string
}

// NodeActionForm is the drain form, or the delete confirmation (Delete)
// whose drain options apply when drain_first is checked.
type NodeActionForm struct {
	Cluster Cluster
	Node    string
	Delete  bool
	Form    Form
	// Unavailable says the control plane did not answer in time: the page
	// shows without checking the node, and says so.
	Unavailable bool
}

func nodePath(clusterID int64, name, sub string) string {
	p := clusterPath(clusterID, "nodes/"+url.PathEscape(name))
	if sub != "" {
		p += "/" + sub
	}
	return p
}

func nodeURL(clusterID int64, name, sub string) templ.SafeURL {
	return templ.SafeURL(nodePath(clusterID, name, sub))
}

func nodeOperationPath(o NodeOperation) string {
	return nodePath(o.ClusterID, o.NodeName, fmt.Sprintf("operations/%d", o.ID))
}

func nodeStatusMsg(status string) string {
	switch status {
	case "Ready":
		return "NodeStatusReady"
	case "NotReady":
		return "NodeStatusNotReady"
	}
	return "NodeStatusUnknown"
}

func nodeActionPath(m NodeActionForm) templ.SafeURL {
	if m.Delete {
		return nodeURL(m.Cluster.ID, m.Node, "delete")
	}
	return nodeURL(m.Cluster.ID, m.Node, "drain")
}

// nodeActionWarning says what draining or deleting the node does.
func nodeActionWarning(ctx context.Context, m NodeActionForm) string {
	if m.Delete {
		return locale.T(ctx, "NodeDeleteWarning")
	}
	return locale.T(ctx, "NodeDrainWarning")
}

func nodeActionTitle(ctx context.Context, m NodeActionForm) string {
	if m.Delete {
		return locale.T(ctx, "NodeDeleteTitle", map[string]any{"Node": m.Node})
	}
	return locale.T(ctx, "NodeDrainTitle", map[string]any{"Node": m.Node})
}

// nodeRowsStreamPath is the stream of the nodes table's rows, sorted as
// the page is.
func nodeRowsStreamPath(l NodeList) string {
	s := l.Sort
	s.Path = clusterPath(l.Cluster.ID, "node-rows/stream")
	return s.URL(s.Key, s.Desc, 1)
}
