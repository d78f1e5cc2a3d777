package jobs

import "github.com/riverqueue/river"

// QueueClusters is the queue of cluster lifecycle jobs.
const QueueClusters = "clusters"

// ClusterReconcileArgs asks for one cluster's host objects to be driven
// toward its row. Every change enqueues one. They are deliberately not
// unique: River's uniqueness covers running jobs, so a change made while a
// job is finishing would be dropped as a duplicate and never reconciled.
// The worker serialises jobs of one cluster instead, and a job with nothing
// left to do finishes at once.
type ClusterReconcileArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (ClusterReconcileArgs) Kind() string { return "cluster_reconcile" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (ClusterReconcileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueClusters, MaxAttempts: 25}
}
