package jobs_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminjobs"
	"github.com/kubebyon/kubebyon/internal/opswatch"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
)

// TestPeriodicSchedules: the admin page's schedules are the periodic jobs
// the client runs, kind by kind, with the options' intervals.
func TestPeriodicSchedules(t *testing.T) {
	t.Parallel()
	opts := jobs.DefaultOptions(true)
	opts.CleanupInterval = 7 * time.Minute
	ss := jobs.PeriodicSchedules(opts)
	require.Contains(t, ss, adminjobs.Schedule{Kind: "cleanup", Interval: 7 * time.Minute})
	require.Contains(t, ss, adminjobs.Schedule{Kind: "cluster_checks", Interval: opts.ChecksInterval})
	require.Contains(t, ss, adminjobs.Schedule{Kind: "edge_watch", Interval: jobs.EdgeWatchInterval})
	require.Contains(t, ss, adminjobs.Schedule{Kind: "ops_watch", Interval: opswatch.Interval})
	require.Len(t, ss, 8)

	// No periodic checks under options without them.
	opts.ChecksInterval = 0
	for _, s := range jobs.PeriodicSchedules(opts) {
		require.NotEqual(t, "cluster_checks", s.Kind)
	}
}

// TestWorkedQueues: what a worker process reports working is what its
// client works, and its River client carries the process's ID.
func TestWorkedQueues(t *testing.T) {
	t.Parallel()
	opts := jobs.DefaultOptions(true)
	require.Equal(t, []string{"checks", "clusters", "default", "email", "webhook"}, jobs.WorkedQueues(opts))
	opts.WorkQueues = []string{"email", "default", "nope"}
	require.Equal(t, []string{"default", "email"}, jobs.WorkedQueues(opts))

	opts.ID = "host-42-abcdefgh"
	rc, err := jobs.NewClient(jobs.Deps{Pool: testenv.DB(t), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: prometheus.NewRegistry()}, opts)
	require.NoError(t, err)
	require.Equal(t, "host-42-abcdefgh", rc.ID())
}
