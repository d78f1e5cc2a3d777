// Package adminoverview reads the platform's state at a glance for the
// admin overview page: accounts, clusters, nodes, River's jobs that fail
// or wait, and what the operator's first-run checklist needs that the
// database records (a test email sent, a DNS check passed, the host
// cluster answering the ops watch).
package adminoverview

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/opswatch"
	"github.com/kubebyon/kubebyon/queries"
)

// FailedWithin is how far back discarded jobs count as failing: River
// keeps them for days, and a failure of last week that nobody retried is
// not the platform's state now.
const FailedWithin = 24 * time.Hour

// Service reads the figures from the database.
type Service struct {
	Pool *pgxpool.Pool
}

// Figures is the platform's state as the database knows it.
type Figures struct {
	queries.AdminOverviewFiguresRow
	// JobsRetrying are jobs that failed and will run again, JobsDiscarded
	// those that failed for good within FailedWithin, JobsQueued those
	// waiting to run (available or scheduled).
	JobsRetrying, JobsDiscarded, JobsQueued int64
	// HostDownSince is when the ops watch's checks of the host cluster
	// started failing; zero while it answers (or was never checked).
	HostDownSince time.Time
}

// Read reads the figures in one read-only transaction.
func (s *Service) Read(ctx context.Context) (Figures, error) {
	var f Figures
	err := pgx.BeginTxFunc(ctx, s.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		q := queries.New(tx)
		var err error
		if f.AdminOverviewFiguresRow, err = q.AdminOverviewFigures(ctx); err != nil {
			return fmt.Errorf("admin overview figures: %w", err)
		}
		// River's table is not in sqlc's schema (River migrates it). Each
		// count reads its states on River's (state, ...) indexes, not the
		// completed jobs River keeps a while (100,000 at 10,000 clusters:
		// 20 ms to pass over, against 0.07 ms).
		err = tx.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM river_job WHERE state = 'retryable'),
			(SELECT count(*) FROM river_job WHERE state = 'discarded' AND finalized_at > now() - make_interval(secs => $1)),
			(SELECT count(*) FROM river_job WHERE state IN ('available', 'scheduled'))`, FailedWithin.Seconds()).Scan(&f.JobsRetrying, &f.JobsDiscarded, &f.JobsQueued)
		if err != nil {
			return fmt.Errorf("count jobs: %w", err)
		}
		st, err := opswatch.Current(ctx, q)
		if err != nil {
			return err
		}
		f.HostDownSince = st.HostDownSince
		return nil
	})
	return f, err
}
