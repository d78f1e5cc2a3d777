package clusters

import (
	"context"

	"github.com/riverqueue/river"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/queries"
)

// Queue is the queue of cluster lifecycle jobs, and of the jobs that talk
// to a cluster's control plane.
const Queue = "clusters"

// ReconcileArgs asks for one cluster's host objects to be driven toward
// its row (worked by jobs.ClusterReconcileWorker). Every change enqueues
// one. They are deliberately not unique: River's uniqueness covers running
// jobs, so a change made while a job is finishing would be dropped as a
// duplicate and never reconciled. The worker serialises jobs of one
// cluster instead, and a job with nothing left to do finishes at once.
type ReconcileArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (ReconcileArgs) Kind() string { return "cluster_reconcile" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (ReconcileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 25}
}

// VirtualConfigFunc gives the platform's client configuration for a ready
// cluster's virtual control plane: Service.VirtualConfig, passed to the
// node, join token and node quota code as a function so that they can be
// tested against any apiserver.
type VirtualConfigFunc func(ctx context.Context, c queries.Cluster) (*rest.Config, error)
