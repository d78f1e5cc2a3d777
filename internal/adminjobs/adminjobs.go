// Package adminjobs is the back office's view of River's background work:
// jobs by state and kind, the failing ones with their errors, the periodic
// jobs' last and next runs, the leader, the worker processes and the
// queues; and the two changes an admin may make, retry and cancel, each in
// one transaction with its audit event.
//
// It reads and changes jobs through River's client API (JobListTx,
// JobRetryTx, JobCancelTx, QueueListTx), which needs no working queues: the
// API replicas of multi-node mode hold an insert-only client. River has no
// API for grouped counts, the leader or the last job of a kind, so those
// few reads are plain SQL here: sqlc reads the schema from migrations/, and
// River's tables come from rivermigrate, so sqlc cannot see them.
package adminjobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/workerprocs"
	"github.com/kubebyon/kubebyon/queries"
)

// PageSize is how many jobs a page lists.
const PageSize = 50

// QueueSilentAfter is how long a queue's row may go without a refresh
// before the page says no process works it: River's producers refresh it
// when they start, then every ten minutes (its queueReportIntervalDefault).
const QueueSilentAfter = 15 * time.Minute

// Errors of the changes: ErrNotFound is answered with 404; ErrNotAllowed's
// message is a catalog message ID, shown to the admin.
var (
	ErrNotFound   = errors.New("adminjobs: no such job")
	ErrNotAllowed = errors.New("ErrAdminJobActionNotAllowed")
)

// Schedule is a periodic job: the kind it inserts and how often (package
// jobs lists them, jobs.PeriodicSchedules).
type Schedule struct {
	Kind     string
	Interval time.Duration
}

// Service carries what the page and its actions need. River may be an
// insert-only client.
type Service struct {
	Pool     *pgxpool.Pool
	River    *river.Client[pgx.Tx]
	Periodic []Schedule
}

// Filter narrows the job list: a state and a kind (empty: all), and the
// keyset, jobs older (of a lower ID) than Before when it is set.
type Filter struct {
	State  rivertype.JobState
	Kind   string
	Before int64
}

// ValidState says whether s is one of River's job states.
func ValidState(s string) bool {
	return slices.Contains(rivertype.JobStates(), rivertype.JobState(s))
}

// Count is how many jobs of a kind are in a state.
type Count struct {
	State rivertype.JobState
	Kind  string
	Jobs  int64
}

// PeriodicRun is a periodic job with its latest run: the latest job of its
// kind still in the table (River deletes finished jobs after a while), if
// any. Next is that job's creation plus the interval: when the leader's
// enqueuer inserts the next one.
type PeriodicRun struct {
	Schedule
	Last *LastRun
	Next time.Time
}

// LastRun is the latest job of a periodic kind.
type LastRun struct {
	ID        int64
	State     rivertype.JobState
	CreatedAt time.Time
	// FinalizedAt is when it completed, was discarded or cancelled; zero
	// while it waits or runs.
	FinalizedAt time.Time
}

// Leader is the River client elected to run the maintenance services and
// insert the periodic jobs. It renews its term while it lives; ExpiresAt
// past means no worker process holds it.
type Leader struct {
	ID        string
	ElectedAt time.Time
	ExpiresAt time.Time
}

// Overview is everything the page shows.
type Overview struct {
	Counts   []Count
	Jobs     []*rivertype.JobRow
	More     bool
	Periodic []PeriodicRun
	// Leader is nil when no worker process was ever elected.
	Leader *Leader
	// Processes are the worker processes' own rows (workerprocs): running
	// ones first, then those stopped within the day.
	Processes []queries.WorkerProcess
	Queues    []*rivertype.Queue
	Now       time.Time
}

// Overview reads the page's figures in one read-only transaction.
func (s *Service) Overview(ctx context.Context, f Filter) (Overview, error) {
	var o Overview
	err := pgx.BeginTxFunc(ctx, s.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if err = tx.QueryRow(ctx, "SELECT now()").Scan(&o.Now); err != nil {
			return fmt.Errorf("database time: %w", err)
		}
		if o.Counts, err = counts(ctx, tx); err != nil {
			return err
		}
		if o.Jobs, o.More, err = s.list(ctx, tx, f, PageSize); err != nil {
			return err
		}
		if o.Periodic, err = s.periodic(ctx, tx); err != nil {
			return err
		}
		if o.Leader, err = leader(ctx, tx); err != nil {
			return err
		}
		if o.Processes, err = queries.New(tx).WorkerProcessList(ctx, workerprocs.ListLimit); err != nil {
			return fmt.Errorf("list worker processes: %w", err)
		}
		res, err := s.River.QueueListTx(ctx, tx, river.NewQueueListParams().First(100))
		if err != nil {
			return fmt.Errorf("list queues: %w", err)
		}
		o.Queues = res.Queues
		return nil
	})
	return o, err
}

// counts is the number of jobs by state and kind.
func counts(ctx context.Context, tx pgx.Tx) ([]Count, error) {
	rows, err := tx.Query(ctx, `SELECT state::text, kind, count(*) FROM river_job GROUP BY state, kind ORDER BY kind, state`)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Count, error) {
		var c Count
		err := r.Scan(&c.State, &c.Kind, &c.Jobs)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	return cs, nil
}

// List is a page of at most limit jobs under f, newest first, and
// whether more follow: the list of Overview, of any size (the admin API's
// ?limit=), without the rest of the page's figures.
func (s *Service) List(ctx context.Context, f Filter, limit int) (jobs []*rivertype.JobRow, more bool, err error) {
	err = pgx.BeginTxFunc(ctx, s.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		jobs, more, err = s.list(ctx, tx, f, limit)
		return err
	})
	return jobs, more, err
}

// list is a page of at most limit jobs, newest first.
func (s *Service) list(ctx context.Context, tx pgx.Tx, f Filter, limit int) ([]*rivertype.JobRow, bool, error) {
	p := river.NewJobListParams().OrderBy(river.JobListOrderByID, river.SortOrderDesc).First(limit + 1)
	if f.State != "" {
		p = p.States(f.State)
	}
	if f.Kind != "" {
		p = p.Kinds(f.Kind)
	}
	if f.Before > 0 {
		// Ordered by ID alone, a cursor needs only the ID.
		p = p.After(river.JobListCursorFromJob(&rivertype.JobRow{ID: f.Before}))
	}
	res, err := s.River.JobListTx(ctx, tx, p)
	if err != nil {
		return nil, false, fmt.Errorf("list jobs: %w", err)
	}
	if len(res.Jobs) > limit {
		return res.Jobs[:limit], true, nil
	}
	return res.Jobs, false, nil
}

// periodic is each periodic job with its latest run.
func (s *Service) periodic(ctx context.Context, tx pgx.Tx) ([]PeriodicRun, error) {
	kinds := make([]string, len(s.Periodic))
	for i, p := range s.Periodic {
		kinds[i] = p.Kind
	}
	rows, err := tx.Query(ctx, `
SELECT j.kind, j.id, j.state::text, j.created_at, j.finalized_at
FROM unnest($1::text[]) AS k(kind)
JOIN LATERAL (
    SELECT id, kind, state, created_at, finalized_at FROM river_job
    WHERE river_job.kind = k.kind ORDER BY id DESC LIMIT 1
) AS j ON true`, kinds)
	if err != nil {
		return nil, fmt.Errorf("last periodic runs: %w", err)
	}
	last := map[string]*LastRun{}
	var kind string
	var r LastRun
	var finalized *time.Time
	_, err = pgx.ForEachRow(rows, []any{&kind, &r.ID, &r.State, &r.CreatedAt, &finalized}, func() error {
		run := r
		if finalized != nil {
			run.FinalizedAt = *finalized
		}
		last[kind] = &run
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("last periodic runs: %w", err)
	}
	runs := make([]PeriodicRun, len(s.Periodic))
	for i, p := range s.Periodic {
		runs[i] = PeriodicRun{Schedule: p, Last: last[p.Kind]}
		if l := runs[i].Last; l != nil {
			runs[i].Next = l.CreatedAt.Add(p.Interval)
		}
	}
	return runs, nil
}

// leader is River's leader, nil when none was ever elected.
func leader(ctx context.Context, tx pgx.Tx) (*Leader, error) {
	var l Leader
	err := tx.QueryRow(ctx, `SELECT leader_id, elected_at, expires_at FROM river_leader ORDER BY expires_at DESC LIMIT 1`).
		Scan(&l.ID, &l.ElectedAt, &l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("river leader: %w", err)
	}
	return &l, nil
}

// CanRetry says whether a job in state may be retried: one that failed or
// finished. River leaves a running job alone, and one still waiting needs
// no retry.
func CanRetry(state rivertype.JobState) bool {
	switch state {
	case rivertype.JobStateRetryable, rivertype.JobStateDiscarded, rivertype.JobStateCancelled, rivertype.JobStateCompleted:
		return true
	}
	return false
}

// CanCancel says whether River cancels a job in state: one still to run
// or running (finished jobs are left as they are).
func CanCancel(state rivertype.JobState) bool {
	switch state {
	case rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRetryable, rivertype.JobStateRunning:
		return true
	}
	return false
}

// Retry makes job id available to be worked now, with its audit event.
func (s *Service) Retry(ctx context.Context, id int64, actor audit.Actor) (*rivertype.JobRow, error) {
	return s.change(ctx, id, actor, "admin.job_retry", CanRetry, s.River.JobRetryTx)
}

// Cancel cancels job id (a running one when its worker next hears of it),
// with its audit event.
func (s *Service) Cancel(ctx context.Context, id int64, actor audit.Actor) (*rivertype.JobRow, error) {
	return s.change(ctx, id, actor, "admin.job_cancel", CanCancel, s.River.JobCancelTx)
}

// change applies do to job id if allowed by its state, locked, in one
// transaction with the audit event.
func (s *Service) change(
	ctx context.Context, id int64, actor audit.Actor, action string,
	allowed func(rivertype.JobState) bool, do func(context.Context, pgx.Tx, int64) (*rivertype.JobRow, error),
) (*rivertype.JobRow, error) {
	var job *rivertype.JobRow
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := adminauth.LockActiveAdmin(ctx, q, actor.UserID); err != nil {
			return err
		}
		// Locked, so that the state checked is the state changed.
		var state rivertype.JobState
		err := tx.QueryRow(ctx, `SELECT state::text FROM river_job WHERE id = $1 FOR UPDATE`, id).Scan(&state)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("lock job %d: %w", id, err)
		}
		if !allowed(state) {
			return ErrNotAllowed
		}
		if job, err = do(ctx, tx, id); err != nil {
			if errors.Is(err, river.ErrNotFound) {
				return ErrNotFound
			}
			return fmt.Errorf("%s %d: %w", action, id, err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: action, TargetType: "job", TargetID: fmt.Sprint(id),
			Details: map[string]any{"kind": job.Kind, "queue": job.Queue, "from": string(state), "to": string(job.State)},
		})
	})
	return job, err
}
