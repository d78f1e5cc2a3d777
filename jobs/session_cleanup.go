package jobs

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/queries"
)

// SessionCleanupArgs asks for expired sessions to be deleted. It runs
// periodically; the session store's own cleanup goroutine is off so that only
// River's leader does this work, once, however many replicas run.
type SessionCleanupArgs struct{}

// Kind implements river.JobArgs.
func (SessionCleanupArgs) Kind() string { return "session_cleanup" }

// SessionCleanupWorker deletes expired sessions.
type SessionCleanupWorker struct {
	river.WorkerDefaults[SessionCleanupArgs]
	Pool   *pgxpool.Pool
	Logger *slog.Logger
}

// Work implements river.Worker.
func (w *SessionCleanupWorker) Work(ctx context.Context, job *river.Job[SessionCleanupArgs]) error {
	n, err := queries.New(w.Pool).SessionDeleteExpired(ctx)
	if err != nil {
		return fmt.Errorf("delete expired sessions: %w", err)
	}
	if n > 0 {
		w.Logger.InfoContext(ctx, "deleted expired sessions", "count", n)
	}
	return nil
}
