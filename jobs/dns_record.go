package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/queries"
)

// DNSRecordWorker converges one cluster's DNS record (dnsrecords.Sync)
// and paces its next check: every dnsrecords.Interval while the platform
// writes the record, idle when it writes none, backing off while the DNS
// server or the host cluster does not answer.
type DNSRecordWorker struct {
	river.WorkerDefaults[dnsrecords.SyncArgs]
	DNS *dnsrecords.Service
	// Transitions logs the clusters whose DNS goes wrong and back.
	Transitions *checks.Transitions
}

// Timeout implements river.Worker: a lookup and an update, each bounded.
func (w *DNSRecordWorker) Timeout(*river.Job[dnsrecords.SyncArgs]) time.Duration {
	return 30 * time.Second
}

// Work implements river.Worker.
func (w *DNSRecordWorker) Work(ctx context.Context, job *river.Job[dnsrecords.SyncArgs]) error {
	next, err := w.DNS.Sync(ctx, job.Args.ClusterID)
	rec := checks.Recorder{Q: queries.New(w.DNS.Pool), Log: w.Transitions}
	return rec.Done(ctx, job.Args.ClusterID, checks.DNSRecord, dnsrecords.Interval, next, err)
}
