package jobs

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/queries"
)

// CleanupArgs asks for expired rows to be deleted (sessions, stale signed-in
// browsers, old one-time codes, rate-limit windows, webhook attempts and
// worker processes not seen for a day) and for the node operations whose
// job River gave up on to be marked failed. It runs periodically on
// River's leader only, once however many replicas run; the session store's
// own cleanup goroutine is off for that reason.
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
		{"webhook attempts older than 30 days", q.WebhookAttemptDeleteOld},
		{"worker processes not seen for a day", q.WorkerProcessDeleteGone},
		{"idempotent API answers older than a day", q.IdempotencyDeleteOld},
		{"interrupted node operations", w.failInterruptedNodeOperations},
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

// liveJobStates are the states of a job River may still work.
var liveJobStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled,
}

// failInterruptedNodeOperations marks failed the running node operations
// whose node_drain job River will not work again: discarded (its rescuer
// discards a job killed on its last attempt without running the worker),
// cancelled, or gone. The row and its job are inserted in one
// transaction and the worker finishes the row before its job completes,
// so a running row with no live job is one nobody will finish.
func (w *CleanupWorker) failInterruptedNodeOperations(ctx context.Context) (int64, error) {
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return 0, fmt.Errorf("river client: %w", err)
	}
	q := queries.New(w.Pool)
	ops, err := q.NodeOperationListRunning(ctx)
	if err != nil {
		return 0, fmt.Errorf("list running node operations: %w", err)
	}
	var n int64
	for _, op := range ops {
		params := river.NewJobListParams().Kinds(nodes.OperationArgs{}.Kinds()...).States(liveJobStates...).First(1).
			Where("(args->>'operation_id')::bigint = @operation_id", river.NamedArgs{"operation_id": op.ID})
		live, err := client.JobList(ctx, params)
		if err != nil {
			return n, fmt.Errorf("jobs of node operation %d: %w", op.ID, err)
		}
		if len(live.Jobs) > 0 {
			continue
		}
		// Only a row still running changes: a worker that finished it
		// meanwhile keeps its outcome.
		if err := q.NodeOperationFinish(ctx, queries.NodeOperationFinishParams{ID: op.ID, Status: nodes.OperationFailed, Message: nodes.OperationInterrupted}); err != nil {
			return n, fmt.Errorf("fail node operation %d: %w", op.ID, err)
		}
		n++
	}
	return n, nil
}
