package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/ingress"
)

// IngressHostnamesWorker checks one cluster's host names
// (ingress.Service.RunHostnamesCheck).
type IngressHostnamesWorker struct {
	river.WorkerDefaults[ingress.HostnamesArgs]
	Ingress *ingress.Service
	// Transitions logs the clusters whose DNS goes wrong and back.
	Transitions *checks.Transitions
}

// Timeout implements river.Worker: a lookup or an update per name, each
// bounded.
func (w *IngressHostnamesWorker) Timeout(*river.Job[ingress.HostnamesArgs]) time.Duration {
	return time.Minute
}

// Work implements river.Worker.
func (w *IngressHostnamesWorker) Work(ctx context.Context, job *river.Job[ingress.HostnamesArgs]) error {
	return w.Ingress.RunHostnamesCheck(ctx, job.Args.ClusterID, w.Transitions)
}
