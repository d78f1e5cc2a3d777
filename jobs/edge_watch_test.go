package jobs_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestEdgeWatch: an edge stuck on an old version is told to the admins
// (in-app and by email, as their preferences say; never to users) once it
// has been out of step for the threshold, once; so is an edge gone silent;
// an edge that keeps applying new versions, a little behind, never is;
// an edge back in step is told of once more.
func TestEdgeWatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	rt := settings.Defaults()
	rt.APIBaseDomain = "clusters.test"
	require.NoError(t, settings.Save(ctx, q, box, rt))
	desired, err := edge.Desired(ctx, q, rt)
	require.NoError(t, err)

	admin, err := q.UserCreate(ctx, queries.UserCreateParams{Email: "watch-admin@example.com", Name: "a", Role: "admin"})
	require.NoError(t, err)
	user, err := q.UserCreate(ctx, queries.UserCreateParams{Email: "watch-user@example.com", Name: "u", Role: "user"})
	require.NoError(t, err)

	t0 := time.Now()
	instance := func(name, applied string, seen time.Time) {
		var tokenID int64
		require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO edge_tokens (name, prefix, secret_hash) VALUES ($1, $2, 'x') RETURNING id`,
			name, "kbe_"+name).Scan(&tokenID))
		_, err := b.pool.Exec(ctx, `INSERT INTO edge_instances (token_id, name, applied_version, last_seen_at) VALUES ($1, $2, $3, $4)`,
			tokenID, name, applied, pgtype.Timestamptz{Time: seen, Valid: true})
		require.NoError(t, err)
	}
	report := func(name, applied string, seen time.Time) {
		_, err := b.pool.Exec(ctx, `UPDATE edge_instances SET applied_version = $2, last_seen_at = $3 WHERE name = $1`,
			name, applied, pgtype.Timestamptz{Time: seen, Valid: true})
		require.NoError(t, err)
	}
	instance("stuck", "old-version", t0)
	instance("busy", "v-0", t0)
	instance("fine", desired.Version, t0)
	instance("silent", desired.Version, t0.Add(-time.Hour))

	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{})
	require.NoError(t, err)
	w := &jobs.EdgeWatchWorker{Pool: b.pool, Box: box, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Notices: notify.Notices{Box: box}}
	run := func(at time.Time) {
		t.Helper()
		w.Now = func() time.Time { return at }
		job := &river.Job[edge.WatchArgs]{JobRow: &rivertype.JobRow{Kind: edge.WatchArgs{}.Kind()}}
		require.NoError(t, w.Work(rivertest.WorkContext(ctx, client), job))
	}
	told := func(userID int64) []string {
		t.Helper()
		rows, err := b.pool.Query(ctx, `SELECT message || ':' || (params->>'Edge') FROM notifications WHERE user_id = $1 AND kind = $2 ORDER BY id`,
			userID, string(notify.EdgeOutOfStep))
		require.NoError(t, err)
		var out []string
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			out = append(out, s)
		}
		require.NoError(t, rows.Err())
		return out
	}

	run(t0)
	require.Equal(t, []string{"EdgeOutOfStep:silent"}, told(admin.ID), "silent for an hour: told at once")
	for i := 1; i <= 7; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		report("busy", "v-"+string(rune('0'+i)), at)
		report("stuck", "old-version", at)
		report("fine", desired.Version, at)
		run(at)
	}
	require.Equal(t, []string{"EdgeOutOfStep:silent", "EdgeOutOfStep:stuck"}, told(admin.ID))
	require.Empty(t, told(user.ID), "users are never told about edges")
	var emails int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'email' AND args->>'template' = $1`, notify.EmailEdgeOutOfStep).Scan(&emails))
	require.Equal(t, 2, emails, "admins get these by email by default")

	at := t0.Add(8 * time.Minute)
	report("stuck", desired.Version, at)
	report("silent", desired.Version, at)
	run(at)
	require.Equal(t, []string{"EdgeOutOfStep:silent", "EdgeOutOfStep:stuck", "EdgeBackInStep:stuck", "EdgeBackInStep:silent"}, told(admin.ID))
	run(at.Add(time.Minute))
	require.Len(t, told(admin.ID), 4)
}
