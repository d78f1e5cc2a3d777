package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/queries"
)

// MetricsMaintainInterval is how often the metrics tables are maintained:
// the 5-minute rollup follows within a minute of a window's end.
const MetricsMaintainInterval = time.Minute

// MetricsMaintainWorker makes the metrics tables' partitions ahead, rolls
// the samples up and drops what is past its retention (metrics.Maintain).
type MetricsMaintainWorker struct {
	river.WorkerDefaults[metrics.MaintainArgs]
	Metrics *metrics.Service
	Logger  *slog.Logger
}

// Timeout implements river.Worker: each step is bounded (a run rolls up at
// most a few hours of windows).
func (w *MetricsMaintainWorker) Timeout(*river.Job[metrics.MaintainArgs]) time.Duration {
	return 5 * time.Minute
}

// Work implements river.Worker.
func (w *MetricsMaintainWorker) Work(ctx context.Context, _ *river.Job[metrics.MaintainArgs]) error {
	st, err := metrics.LoadSettings(ctx, queries.New(w.Metrics.Pool))
	if err != nil {
		return err
	}
	return w.Metrics.Maintain(ctx, time.Now(), st, w.Logger)
}
