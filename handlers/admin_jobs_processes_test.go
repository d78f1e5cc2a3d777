package handlers_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/workerprocs"
)

// processRowHTML is the processes table's row of id.
func processRowHTML(t *testing.T, body, id string) string {
	t.Helper()
	row := handlerstest.SectionHTML(t, body, "jobs-process-"+id)
	end := strings.Index(row, "</tr>")
	require.Greater(t, end, 0)
	return row[:end]
}

// TestAdminJobsListsWorkerProcesses: the page lists the worker processes
// from their heartbeats: the one whose River client leads is marked
// leader, one whose heartbeat stopped a while ago is not seen since its
// last beat, one that shut down cleanly says when. Non-admins get 404.
func TestAdminJobsListsWorkerProcesses(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupWorking(t)
	admin, email := b.SignedUpAdmin(t, "jobs-procs-admin")
	ctx := context.Background()

	// The test's River client is the only worker client on this database:
	// it is elected. Its process row carries its client ID, as cmd sets
	// River's ID from the row's.
	handlerstest.WaitFor(t, func() bool {
		var id string
		err := b.Pool.QueryRow(ctx, `SELECT leader_id FROM river_leader WHERE expires_at > now()`).Scan(&id)
		return err == nil && id == b.River.ID()
	}, "the test's River client is elected")
	started := time.Now().Add(-time.Hour)
	b.Heartbeat(t, workerprocs.Process{
		ID: b.River.ID(), Hostname: "worker-a", PID: 101, Version: "v9.9.9",
		Queues: []string{"default", "email"}, StartedAt: started,
	})
	// Killed five minutes ago: its heartbeat ended without marking the
	// row stopped, and the row was not refreshed since.
	killed, kill := context.WithCancel(ctx)
	h := &workerprocs.Heartbeat{
		Pool: b.Pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Process: workerprocs.Process{ID: "worker-b-202-stale", Hostname: "worker-b", PID: 202, Version: "v9.9.8", Queues: []string{"checks"}, StartedAt: started},
	}
	require.NoError(t, h.Start(killed))
	kill()
	_, err := b.Pool.Exec(ctx, `UPDATE worker_processes SET last_seen_at = now() - interval '5 minutes' WHERE id = 'worker-b-202-stale'`)
	require.NoError(t, err)
	// Shut down cleanly.
	stopped := b.Heartbeat(t, workerprocs.Process{ID: "worker-c-303-done", Hostname: "worker-c", PID: 303, Version: "v9.9.7", Queues: []string{"default"}, StartedAt: started})
	require.NoError(t, stopped.Stop(ctx))

	code, body := admin.Get("/admin/jobs")
	require.Equal(t, http.StatusOK, code)
	procs := handlerstest.SectionHTML(t, body, "jobs-processes")
	require.Contains(t, procs, "Queues worked")

	leader := processRowHTML(t, body, b.River.ID())
	for _, want := range []string{"worker-a", ">101<", "v9.9.9", "default, email", `data-testid="jobs-process-leader"`, adminTimeText(started)} {
		require.Contains(t, leader, want)
	}
	require.NotContains(t, leader, "jobs-process-stale")

	stale := processRowHTML(t, body, "worker-b-202-stale")
	require.Contains(t, stale, `data-testid="jobs-process-stale"`)
	require.Contains(t, stale, "Not seen since "+adminTimeText(lastSeen(t, b, "worker-b-202-stale")))
	require.NotContains(t, stale, "jobs-process-leader")

	done := processRowHTML(t, body, "worker-c-303-done")
	require.Contains(t, done, `data-testid="jobs-process-stopped"`)
	require.Contains(t, done, "Stopped at ")
	require.NotContains(t, done, "jobs-process-stale")
	require.NotContains(t, done, "jobs-process-leader")

	// Running ones first, the stopped one last.
	require.Less(t, strings.Index(body, "worker-b-202-stale"), strings.Index(body, "worker-c-303-done"))

	// In Chinese too.
	_, err = b.Pool.Exec(ctx, `UPDATE users SET language = 'zh-CN' WHERE email = $1`, email)
	require.NoError(t, err)
	_, body = admin.Get("/admin/jobs")
	require.Contains(t, processRowHTML(t, body, "worker-b-202-stale"), "起未出现")

	user, _ := b.SignedUpUser(t, "jobs-procs-user")
	for _, c := range []*handlerstest.Client{user, b.Client(t)} {
		code, body := c.Get("/admin/jobs")
		require.Equal(t, http.StatusNotFound, code)
		require.NotContains(t, body, "worker-a")
	}
}

// lastSeen is when process id was last seen, as stored.
func lastSeen(t *testing.T, b *handlerstest.Bundle, id string) time.Time {
	t.Helper()
	var at time.Time
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT last_seen_at FROM worker_processes WHERE id = $1`, id).Scan(&at))
	return at
}

// adminTimeText is a time as the admin pages write it.
func adminTimeText(at time.Time) string {
	return at.UTC().Format("2006-01-02 15:04 UTC")
}
