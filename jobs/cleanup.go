package jobs

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/queries"
)

// CleanupArgs asks for expired rows to be deleted: sessions, stale signed-in
// browsers, old one-time codes and rate-limit windows. It runs periodically
// on River's leader only, once however many replicas run; the session
// store's own cleanup goroutine is off for that reason.
type CleanupArgs struct{}

// Kind implements river.JobArgs.
func (CleanupArgs) Kind() string { return "cleanup" }

// CleanupWorker deletes expired rows. Each statement is idempotent.
type CleanupWorker struct {
	river.WorkerDefaults[CleanupArgs]
	Pool   *pgxpool.Pool
	Logger *slog.Logger
}

// Work implements river.Worker.
func (w *CleanupWorker) Work(ctx context.Context, job *river.Job[CleanupArgs]) error {
	q := queries.New(w.Pool)
	steps := []struct {
		what string
		run  func(context.Context) (int64, error)
	}{
		{"expired sessions", q.SessionDeleteExpired},
		{"stale signed-in sessions", q.UserSessionDeleteStale},
		{"expired email codes", q.EmailCodeDeleteExpired},
		{"old rate-limit windows", q.RateLimitDeleteOld},
	}
	for _, s := range steps {
		n, err := s.run(ctx)
		if err != nil {
			return fmt.Errorf("delete %s: %w", s.what, err)
		}
		if n > 0 {
			w.Logger.InfoContext(ctx, "cleanup", "deleted", s.what, "count", n)
		}
	}
	return nil
}
