package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/webhooks"
)

// WebhookWorker makes one attempt at delivering an event to a webhook
// channel and logs it; River retries what may succeed later (network
// errors, 5xx, 429) with its backoff.
type WebhookWorker struct {
	river.WorkerDefaults[notify.WebhookArgs]
	Webhooks *webhooks.Service
}

// Timeout implements river.Worker: one attempt's timeout and time to log
// it.
func (w *WebhookWorker) Timeout(*river.Job[notify.WebhookArgs]) time.Duration {
	return webhooks.AttemptTimeout + 10*time.Second
}

// Work implements river.Worker.
func (w *WebhookWorker) Work(ctx context.Context, job *river.Job[notify.WebhookArgs]) error {
	return w.Webhooks.Deliver(ctx, job.Args, job.Attempt, job.MaxAttempts)
}
