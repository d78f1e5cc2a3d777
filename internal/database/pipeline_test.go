package database_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// tracedPool is a pool on a database of its own whose round trips are
// counted.
func tracedPool(t *testing.T) (*pgxpool.Pool, *testenv.RoundTrips) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testenv.DBURL(t))
	require.NoError(t, err)
	trips := &testenv.RoundTrips{}
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, trips
}

// TestPipeline checks that calls get their own answers, in one batch,
// whatever the calls before them got: a row, rows, none, a command tag, a
// failed query, or no query made.
func TestPipeline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, trips := tracedPool(t)

	var (
		sum       int
		sumErr    error
		none      int
		noneErr   error
		series    []int
		seriesErr error
		tag       pgconn.CommandTag
		tagErr    error
		after     string
		afterErr  error
	)
	calls := []database.Call{
		func(ctx context.Context, db database.DBTX) error {
			sumErr = db.QueryRow(ctx, "SELECT $1::int + $2::int", 2, 3).Scan(&sum)
			return nil
		},
		func(ctx context.Context, db database.DBTX) error {
			noneErr = db.QueryRow(ctx, "SELECT 1 WHERE false").Scan(&none)
			return nil
		},
		func(ctx context.Context, db database.DBTX) error {
			rows, err := db.Query(ctx, "SELECT generate_series(1, $1::int)", 3)
			if err != nil {
				seriesErr = err
				return nil
			}
			series, seriesErr = pgx.CollectRows(rows, pgx.RowTo[int])
			return nil
		},
		func(ctx context.Context, db database.DBTX) error {
			tag, tagErr = db.Exec(ctx, "SELECT 1")
			return nil
		},
		func(ctx context.Context, db database.DBTX) error {
			afterErr = db.QueryRow(ctx, "SELECT 'after'").Scan(&after)
			return nil
		},
	}
	require.NoError(t, database.Pipeline(ctx, pool, calls...))
	require.NoError(t, sumErr)
	require.Equal(t, 5, sum)
	require.ErrorIs(t, noneErr, pgx.ErrNoRows)
	require.NoError(t, seriesErr)
	require.Equal(t, []int{1, 2, 3}, series)
	require.NoError(t, tagErr)
	require.Equal(t, "SELECT 1", tag.String())
	require.NoError(t, afterErr)
	require.Equal(t, "after", after)
	require.EqualValues(t, 1, trips.Batches(), "one round trip")
	require.Zero(t, trips.Queries(), "no query of its own")
}

// TestPipelineFailures checks what a call that fails, queries otherwise
// the second time, or queries not at all gets, and that the calls after
// it still get their answers.
func TestPipelineFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := tracedPool(t)

	t.Run("a query fails", func(t *testing.T) {
		t.Parallel()
		var before int
		var failed error
		err := database.Pipeline(ctx, pool,
			func(ctx context.Context, db database.DBTX) error {
				_ = db.QueryRow(ctx, "SELECT 7").Scan(&before)
				return nil
			},
			func(ctx context.Context, db database.DBTX) error {
				var n int
				failed = db.QueryRow(ctx, "SELECT 1 / $1::int", 0).Scan(&n)
				return nil
			})
		require.Equal(t, 7, before, "the answer before the failure")
		var pgErr *pgconn.PgError
		require.ErrorAs(t, failed, &pgErr)
		require.Equal(t, "22012", pgErr.Code, "division by zero")
		require.ErrorAs(t, err, &pgErr, "the pipeline reports the failure too")
	})

	t.Run("another query the second time, and none", func(t *testing.T) {
		t.Parallel()
		var changedRuns, skippedRuns int
		var changed error
		var after string
		err := database.Pipeline(ctx, pool,
			func(ctx context.Context, db database.DBTX) error {
				changedRuns++
				var n int
				changed = db.QueryRow(ctx, "SELECT $1::int", changedRuns).Scan(&n)
				return nil
			},
			func(ctx context.Context, db database.DBTX) error {
				if skippedRuns++; skippedRuns > 1 {
					return nil
				}
				var s string
				_ = db.QueryRow(ctx, "SELECT 'skipped'").Scan(&s)
				return nil
			},
			func(ctx context.Context, db database.DBTX) error {
				_ = db.QueryRow(ctx, "SELECT 'after'").Scan(&after)
				return nil
			})
		require.NoError(t, err)
		require.ErrorContains(t, changed, "another query than the one it made first")
		require.Equal(t, "after", after, "the next calls read their own answers")
	})

	t.Run("two queries in one call", func(t *testing.T) {
		t.Parallel()
		err := database.Pipeline(ctx, pool, func(ctx context.Context, db database.DBTX) error {
			_, _ = db.Exec(ctx, "SELECT 1")
			_, _ = db.Exec(ctx, "SELECT 2")
			return nil
		})
		require.ErrorContains(t, err, "call 0 made 2 queries")
	})
}
