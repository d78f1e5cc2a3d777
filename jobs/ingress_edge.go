package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/ingress"
)

// IngressEdgeWorker converges one cluster's routes through the platform
// edge (ingress.Service.SyncEdge) and paces its next check: every
// ingress.EdgeInterval while the cluster goes through the edge, idle
// otherwise (switching, the mode, the controller and the host names make
// it due), backing off while the host or the cluster does not answer.
type IngressEdgeWorker struct {
	river.WorkerDefaults[ingress.EdgeArgs]
	Ingress *ingress.Service
	// Transitions logs the clusters going unreachable and back.
	Transitions *checks.Transitions
}

// Timeout implements river.Worker: a few calls to each apiserver, each
// bounded.
func (w *IngressEdgeWorker) Timeout(*river.Job[ingress.EdgeArgs]) time.Duration {
	return 30 * time.Second
}

// Work implements river.Worker.
func (w *IngressEdgeWorker) Work(ctx context.Context, job *river.Job[ingress.EdgeArgs]) error {
	return w.Ingress.RunEdgeCheck(ctx, job.Args.ClusterID, w.Transitions)
}
