package jobs

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/billing"
)

// BillingPeriodsWorker ends periods, expires grace periods and unpaid
// orders, and tells owners of periods ending soon, batch after batch
// until nothing is due.
type BillingPeriodsWorker struct {
	river.WorkerDefaults[billing.PeriodsArgs]
	Billing *billing.Service
	Logger  *slog.Logger
}

// maxBillingBatches bounds one run; what is left waits for the next.
const maxBillingBatches = 20

// Work implements river.Worker.
func (w *BillingPeriodsWorker) Work(ctx context.Context, _ *river.Job[billing.PeriodsArgs]) error {
	for _, step := range []struct {
		what string
		run  func(context.Context) (int, error)
	}{{"subscriptions", w.Billing.RunPeriods}, {"expired orders", w.Billing.ExpireOrders}} {
		for range maxBillingBatches {
			n, err := step.run(ctx)
			if err != nil {
				return fmt.Errorf("billing %s: %w", step.what, err)
			}
			if n > 0 {
				w.Logger.InfoContext(ctx, "billing", "handled", step.what, "count", n)
			}
			if n < billing.MaxBatch {
				break
			}
		}
	}
	return nil
}
