package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/queries"
)

// IngressDNSWorker converges one cluster's CNAME target records
// (ingress.Service.SyncDNS) and paces its next check: every
// ingress.DNSInterval while the platform writes them, idle otherwise (the
// health job makes it due when the nodes change), backing off while the
// DNS server does not answer.
type IngressDNSWorker struct {
	river.WorkerDefaults[ingress.DNSArgs]
	Ingress *ingress.Service
	// Transitions logs the clusters whose DNS goes wrong and back.
	Transitions *checks.Transitions
}

// Timeout implements river.Worker: a lookup and an update, each bounded.
func (w *IngressDNSWorker) Timeout(*river.Job[ingress.DNSArgs]) time.Duration {
	return 30 * time.Second
}

// Work implements river.Worker.
func (w *IngressDNSWorker) Work(ctx context.Context, job *river.Job[ingress.DNSArgs]) error {
	next, err := w.Ingress.SyncDNS(ctx, job.Args.ClusterID)
	rec := checks.Recorder{Q: queries.New(w.Ingress.Pool), Log: w.Transitions}
	return rec.Done(ctx, job.Args.ClusterID, checks.IngressDNS, ingress.DNSInterval, next, err)
}
