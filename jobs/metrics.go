package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// metricsMiddleware counts worked jobs by kind and outcome and times them.
type metricsMiddleware struct {
	river.MiddlewareDefaults
	worked   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetricsMiddleware(reg prometheus.Registerer) *metricsMiddleware {
	m := &metricsMiddleware{
		worked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubebyon_river_jobs_worked_total",
			Help: "River jobs worked by this process, by kind and outcome (completed, snoozed, cancelled, error).",
		}, []string{"kind", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kubebyon_river_job_duration_seconds",
			Help:    "Time River workers in this process spent on one job attempt, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 9),
		}, []string{"kind"}),
	}
	reg.MustRegister(m.worked, m.duration)
	return m
}

// Work implements rivertype.WorkerMiddleware.
func (m *metricsMiddleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	start := time.Now()
	err := doInner(ctx)
	m.duration.WithLabelValues(job.Kind).Observe(time.Since(start).Seconds())
	m.worked.WithLabelValues(job.Kind, outcome(err)).Inc()
	return err
}

func outcome(err error) string {
	var snooze *rivertype.JobSnoozeError
	var cancel *rivertype.JobCancelError
	switch {
	case err == nil:
		return "completed"
	case errors.As(err, &snooze):
		return "snoozed"
	case errors.As(err, &cancel):
		return "cancelled"
	default:
		return "error"
	}
}
