package nodes

import (
	"time"

	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/checks"
)

// The statuses of a node operation (a node_operations row).
const (
	OperationRunning   = "running"
	OperationSucceeded = "succeeded"
	OperationFailed    = "failed"
)

// OperationInterrupted is the message of an operation whose worker stopped
// for good before it finished. Pages show the catalog's
// NodeOperationInterrupted in its place, in the reader's language.
const OperationInterrupted = "interrupted: the worker stopped before the operation finished and it will not be retried; check the node and start it again"

// DrainOptions are kubectl drain's options the console offers.
type DrainOptions struct {
	IgnoreDaemonSets   bool `json:"ignore_daemonsets"`
	DeleteEmptyDirData bool `json:"delete_emptydir_data"`
	// Force also deletes pods no controller manages (kubectl drain --force).
	Force bool `json:"force"`
	// GracePeriodSeconds overrides each pod's own; -1 keeps the pod's.
	GracePeriodSeconds int `json:"grace_period_seconds"`
	TimeoutSeconds     int `json:"timeout_seconds"`
}

// OperationArgs runs one node operation (a node_operations row, worked by
// jobs.NodeOperationWorker): drain the node (when Drain is set), then
// delete the Node object (when DeleteNode is set).
type OperationArgs struct {
	OperationID int64         `json:"operation_id"`
	ClusterID   int64         `json:"cluster_id"`
	NodeName    string        `json:"node_name"`
	Drain       *DrainOptions `json:"drain,omitempty"`
	DeleteNode  bool          `json:"delete_node"`
}

// Kind implements river.JobArgs.
func (OperationArgs) Kind() string { return "node_operation" }

// KindAliases implements river.JobArgsWithKindAliases: the kind was
// node_drain, which jobs queued before the rename still carry. Remove it
// once no such job can be left (a release later).
func (OperationArgs) KindAliases() []string { return []string{"node_drain"} }

// Kinds are the operation job's kind and its aliases, for listing its jobs.
func (a OperationArgs) Kinds() []string { return append([]string{a.Kind()}, a.KindAliases()...) }

// InsertOpts implements river.JobArgsWithInsertOpts: a retry continues a
// drain whose worker died; a drain that failed is recorded, not retried.
func (OperationArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3}
}

// The periodic check of a ready cluster's nodes (checks.NodeHealth) runs
// every HealthInterval while the cluster answers, and every
// IngressHealthInterval while its managed ingress is on: the CNAME
// target's records follow the nodes' readiness, and a node gone NotReady
// must leave them within a minute (the check, then the DNS check it makes
// due at once).
const (
	HealthInterval        = time.Minute
	IngressHealthInterval = 30 * time.Second
)

// HealthArgs snapshots one ready cluster's nodes and tells its owner about
// nodes NotReady too long (worked by jobs.NodeHealthWorker, queued when
// its check is due).
type HealthArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (HealthArgs) Kind() string { return "node_health" }

// InsertOpts implements river.JobArgsWithInsertOpts: the check comes due
// again (sooner while it fails), so a failed one is not retried by River.
func (HealthArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: checks.Queue, MaxAttempts: 1, UniqueOpts: checks.UniqueWhileWaiting()}
}
