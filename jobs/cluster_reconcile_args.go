package jobs

import (
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// QueueClusters is the queue of cluster lifecycle jobs.
const QueueClusters = "clusters"

// ClusterReconcileArgs asks for one cluster's host objects to be driven
// toward its row. It is unique per cluster while waiting or running, so
// repeated edits coalesce; the worker re-runs itself when the row changed
// while it worked, so no edit is lost.
type ClusterReconcileArgs struct {
	ClusterID int64 `json:"cluster_id" river:"unique"`
}

// Kind implements river.JobArgs.
func (ClusterReconcileArgs) Kind() string { return "cluster_reconcile" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (ClusterReconcileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueClusters,
		MaxAttempts: 25,
		UniqueOpts: river.UniqueOpts{
			ByArgs: true,
			// Not completed: a finished job must not block the next change.
			ByState: []rivertype.JobState{
				rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
				rivertype.JobStateRetryable, rivertype.JobStateScheduled,
			},
		},
	}
}
