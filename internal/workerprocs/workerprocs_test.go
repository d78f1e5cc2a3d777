package workerprocs_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/workerprocs"
	"github.com/kubebyon/kubebyon/queries"
)

// row is a process's row as stored.
func row(t *testing.T, pool *pgxpool.Pool, id string) queries.WorkerProcess {
	t.Helper()
	ps, err := queries.New(pool).WorkerProcessList(context.Background(), workerprocs.ListLimit)
	require.NoError(t, err)
	for _, p := range ps {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("no row of worker process %s", id)
	return queries.WorkerProcess{}
}

func TestNewProcessNamesThisProcess(t *testing.T) {
	t.Parallel()
	p := workerprocs.NewProcess("v1.2.3", []string{"email", "default"})
	host, err := os.Hostname()
	require.NoError(t, err)
	require.Equal(t, host, p.Hostname)
	require.Equal(t, os.Getpid(), p.PID)
	require.Equal(t, []string{"default", "email"}, p.Queues)
	require.True(t, strings.HasPrefix(p.ID, host[:min(len(host), 60)]+"-"+strconv.Itoa(os.Getpid())+"-"), p.ID)
	require.LessOrEqual(t, len(p.ID), 100, "River refuses longer client IDs")
	require.NotEqual(t, p.ID, workerprocs.NewProcess("v1.2.3", nil).ID, "a restart in the same container gets a new ID")
}

// TestHeartbeat: the row is written at start, refreshed while the process
// runs, marked stopped at Stop and no longer refreshed; the cleanup's
// query deletes it only once it has not been seen for a day.
func TestHeartbeat(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	p := workerprocs.NewProcess("v1.2.3", []string{"email", "default"})
	h := &workerprocs.Heartbeat{
		Pool: pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Process: p,
		Interval: 50 * time.Millisecond,
	}
	require.NoError(t, h.Start(ctx))
	first := row(t, pool, p.ID)
	require.Equal(t, p.Hostname, first.Hostname)
	require.Equal(t, int32(p.PID), first.Pid)
	require.Equal(t, "v1.2.3", first.Version)
	require.Equal(t, []string{"default", "email"}, first.Queues)
	require.WithinDuration(t, p.StartedAt, first.StartedAt.Time, time.Millisecond)
	require.False(t, first.StoppedAt.Valid)

	// Refreshed: last seen moves on, the start stays.
	require.Eventually(t, func() bool {
		return row(t, pool, p.ID).LastSeenAt.Time.After(first.LastSeenAt.Time)
	}, 5*time.Second, 20*time.Millisecond, "the heartbeat refreshes the row")
	require.Equal(t, first.StartedAt, row(t, pool, p.ID).StartedAt)

	// A row deleted under a live process comes back at its next beat.
	_, err := pool.Exec(ctx, `DELETE FROM worker_processes WHERE id = $1`, p.ID)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM worker_processes WHERE id = $1`, p.ID).Scan(&n))
		return n == 1
	}, 5*time.Second, 20*time.Millisecond, "the heartbeat writes the row again")

	// Stopped: marked, and left alone after.
	require.NoError(t, h.Stop(ctx))
	stopped := row(t, pool, p.ID)
	require.True(t, stopped.StoppedAt.Valid)
	require.Equal(t, stopped.StoppedAt.Time, stopped.LastSeenAt.Time)
	time.Sleep(150 * time.Millisecond)
	require.Equal(t, stopped, row(t, pool, p.ID), "no beat after Stop")
	require.NoError(t, h.Stop(ctx), "a second Stop does nothing")

	// Pruned: a row seen within the day is kept, one older is deleted,
	// stopped or not.
	other := workerprocs.NewProcess("v1.2.3", nil)
	o := &workerprocs.Heartbeat{Pool: pool, Logger: h.Logger, Process: other}
	require.NoError(t, o.Start(ctx))
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	q := queries.New(pool)
	n, err := q.WorkerProcessDeleteGone(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = pool.Exec(ctx, `UPDATE worker_processes SET last_seen_at = now() - interval '25 hours'`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE worker_processes SET last_seen_at = now() - interval '23 hours' WHERE id = $1`, other.ID)
	require.NoError(t, err)
	n, err = q.WorkerProcessDeleteGone(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	ps, err := q.WorkerProcessList(ctx, workerprocs.ListLimit)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, other.ID, ps[0].ID)
}

// TestHeartbeatEndsWithItsContext: the process context ending stops the
// refreshes; the row is marked stopped only by Stop (a clean shutdown).
func TestHeartbeatEndsWithItsContext(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	p := workerprocs.NewProcess("dev", []string{"default"})
	h := &workerprocs.Heartbeat{
		Pool: pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Process: p,
		Interval: 20 * time.Millisecond,
	}
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, h.Start(ctx))
	cancel()
	time.Sleep(50 * time.Millisecond)
	last := row(t, pool, p.ID)
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, last, row(t, pool, p.ID), "no beat after the context ended")
	require.False(t, last.StoppedAt.Valid)
	require.NoError(t, h.Stop(context.Background()))
	require.True(t, row(t, pool, p.ID).StoppedAt.Valid)
}
