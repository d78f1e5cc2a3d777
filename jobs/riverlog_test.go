package jobs

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRiverLogLevels: River's failed jobs come out as warnings (retried)
// and errors (not), its steady-state lines only at debug, the rest as
// River says.
func TestRiverLogLevels(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	logger := slog.New(riverLog{slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo})}).With("component", "river")
	ctx := context.Background()
	logger.InfoContext(ctx, "JobExecutor: Job errored; retrying", "job_id", 1)
	logger.InfoContext(ctx, "JobExecutor: Job errored", "job_id", 2)
	logger.InfoContext(ctx, "producer: Producer job counts", "num_completed", 3)
	logger.InfoContext(ctx, "JobCleaner: Ran successfully", "num_jobs_deleted", 0)
	logger.InfoContext(ctx, "River client started")
	require.Equal(t, "level=WARN msg=\"JobExecutor: Job errored; retrying\" component=river job_id=1\n"+
		"level=ERROR msg=\"JobExecutor: Job errored\" component=river job_id=2\n"+
		"level=INFO msg=\"River client started\" component=river\n", stripTimes(out.String()))
}

// stripTimes drops the time= field of text log lines.
func stripTimes(s string) string {
	var b bytes.Buffer
	for _, line := range bytes.SplitAfter([]byte(s), []byte("\n")) {
		if i := bytes.IndexByte(line, ' '); i > 0 && bytes.HasPrefix(line, []byte("time=")) {
			line = line[i+1:]
		}
		b.Write(line)
	}
	return b.String()
}
