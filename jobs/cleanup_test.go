package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

type testBundle struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := testenv.DB(t)
	return &testBundle{
		pool:   pool,
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// seedSessions writes one expired and one live session with the session
// store's own query (the store keeps them under their tokens' hashes).
func (b *testBundle) seedSessions(t *testing.T) {
	t.Helper()
	q := queries.New(b.pool)
	for tok, expiry := range map[string]time.Time{"expired": time.Now().Add(-time.Minute), "live": time.Now().Add(time.Hour)} {
		require.NoError(t, q.SessionCommit(context.Background(), queries.SessionCommitParams{
			TokenHash: tok, Data: []byte(tok), Expiry: pgtype.Timestamptz{Time: expiry, Valid: true},
		}))
	}
}

func (b *testBundle) sessionTokens(t *testing.T) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), "SELECT token FROM sessions ORDER BY token")
	require.NoError(t, err)
	var tokens []string
	for rows.Next() {
		var tok string
		require.NoError(t, rows.Scan(&tok))
		tokens = append(tokens, tok)
	}
	require.NoError(t, rows.Err())
	return tokens
}

func TestCleanupWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedSessions(t)
	ctx := context.Background()
	// Worker processes: one not seen for over a day, one seen lately.
	_, err := b.pool.Exec(ctx, `INSERT INTO worker_processes (id, hostname, pid, version, queues, started_at, last_seen_at)
VALUES ('gone', 'h', 1, 'dev', '{}', now() - interval '2 days', now() - interval '25 hours'),
       ('live', 'h', 2, 'dev', '{}', now() - interval '2 days', now() - interval '1 minute')`)
	require.NoError(t, err)

	worker := &jobs.CleanupWorker{Pool: b.pool, Logger: b.logger}
	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, worker)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck

	res, err := w.Work(ctx, t, tx, jobs.CleanupArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, []string{"live"}, b.sessionTokens(t))
	procs, err := queries.New(b.pool).WorkerProcessList(ctx, 10)
	require.NoError(t, err)
	require.Len(t, procs, 1)
	require.Equal(t, "live", procs[0].ID)

	// Idempotent: a second run has nothing to do and succeeds.
	res, err = w.Work(ctx, t, tx, jobs.CleanupArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, []string{"live"}, b.sessionTokens(t))
}

// TestClientRunsPeriodicCleanup runs the production client: River elects a
// leader, the periodic job is inserted and worked, and the metrics count it.
func TestClientRunsPeriodicCleanup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedSessions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	box, err := testBox()
	require.NoError(t, err)
	catalog, err := locale.New()
	require.NoError(t, err)
	d := workerDeps(b.pool, box, catalog, b.logger, "")
	reg := prometheus.NewRegistry()
	d.Metrics = reg
	client, err := jobs.NewClient(d, jobs.DefaultOptions(true))
	require.NoError(t, err)
	events, stopEvents := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	defer stopEvents()
	require.NoError(t, client.Start(ctx))
	defer func() { require.NoError(t, client.Stop(context.Background())) }()

	// Other periodic jobs run on start too; wait for the clean-up's.
	for done := false; !done; {
		select {
		case ev := <-events:
			require.Equal(t, river.EventKindJobCompleted, ev.Kind, "%s failed: %+v", ev.Job.Kind, ev.Job.Errors)
			done = ev.Job.Kind == (jobs.CleanupArgs{}).Kind()
		case <-ctx.Done():
			t.Fatal("the periodic session cleanup job did not run")
		}
	}
	require.Equal(t, []string{"live"}, b.sessionTokens(t))
	families, err := reg.Gather()
	require.NoError(t, err)
	var worked float64
	for _, f := range families {
		if f.GetName() != "kubebyon_river_jobs_worked_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == "cleanup" && labels["outcome"] == "completed" {
				worked = m.GetCounter().GetValue()
			}
		}
	}
	require.Equal(t, 1.0, worked, "the worked-jobs metric counts the clean-up")
}
