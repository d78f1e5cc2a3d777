package jobs_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/webhooks"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestWebhookWorker: River retries a delivery answered with a 500,
// cancels one answered with a 404, and completes one delivered.
func TestWebhookWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	catalog, err := locale.New()
	require.NoError(t, err)
	svc := &webhooks.Service{Pool: b.pool, Box: box, Catalog: catalog, BaseURL: "https://kubebyon.example.com"}
	q := queries.New(b.pool)
	admin, err := q.UserCreate(ctx, queries.UserCreateParams{Email: "hook-admin@example.com", Name: "a", Role: "admin"})
	require.NoError(t, err)
	user, err := q.UserCreate(ctx, queries.UserCreateParams{Email: "hook-user@example.com", Name: "u", Role: "user"})
	require.NoError(t, err)
	_, err = svc.SaveNetwork(ctx, "127.0.0.1/32", audit.Actor{UserID: admin.ID})
	require.NoError(t, err)

	var code atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(int(code.Load())) }))
	t.Cleanup(srv.Close)
	ch, err := svc.Create(ctx, actingAs(t, b.pool, user.ID), "en", webhooks.Input{Name: "ops", Kind: webhooks.Slack, URL: srv.URL}, audit.Actor{UserID: user.ID})
	require.NoError(t, err)

	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.WebhookWorker{Webhooks: svc})
	work := func(status int) (*rivertest.WorkResult, error) {
		t.Helper()
		code.Store(int32(status))
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck // the job row only
		args := notify.WebhookArgs{
			ChannelID: ch.Channel.ID, EventID: notify.NewEventID(), EventKind: string(notify.NodeNotReady), Template: notify.EmailNodeNotReady,
			Lang: "en", Time: time.Now(), Sealed: box.Seal([]byte(`{"Node":"n1","Cluster":"demo","ClusterID":3,"Minutes":5}`)),
		}
		return w.Work(ctx, t, tx, args, nil)
	}
	res, err := work(http.StatusInternalServerError)
	require.ErrorContains(t, err, "HTTP 500")
	require.Equal(t, river.EventKindJobFailed, res.EventKind)
	// The first retry comes after about a second: River makes it available
	// at once, later ones retryable after a longer backoff.
	require.Contains(t, []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateRetryable}, res.Job.State)
	require.Len(t, res.Job.Errors, 1)
	require.Equal(t, notify.WebhookMaxAttempts, res.Job.MaxAttempts)
	require.Equal(t, notify.QueueWebhook, res.Job.Queue)

	res, err = work(http.StatusNotFound)
	require.NoError(t, err, "a cancel is the worker's choice, not an error")
	require.Equal(t, river.EventKindJobCancelled, res.EventKind)
	res, err = work(http.StatusOK)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)

	log, err := svc.Log(ctx, actingAs(t, b.pool, user.ID), ch.Channel.ID)
	require.NoError(t, err)
	require.Len(t, log, 3)
	require.Equal(t, []string{webhooks.StatusDelivered, webhooks.StatusFailed, webhooks.StatusRetrying}, []string{log[0].Status, log[1].Status, log[2].Status})
}

// TestEdgeWatchTellsPlatformWebhooks: an edge out of step is delivered
// once to each platform channel, whichever admins there are.
func TestEdgeWatchTellsPlatformWebhooks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	rt := settings.Defaults()
	rt.APIBaseDomain = "clusters.test"
	require.NoError(t, settings.Save(ctx, q, box, rt))
	var admins []int64
	for _, email := range []string{"edge-admin1@example.com", "edge-admin2@example.com"} {
		a, err := q.UserCreate(ctx, queries.UserCreateParams{Email: email, Name: "a", Role: "admin"})
		require.NoError(t, err)
		admins = append(admins, a.ID)
	}
	svc := &webhooks.Service{Pool: b.pool, Box: box}
	ch, err := svc.Create(ctx, webhooks.Platform, "en", webhooks.Input{Name: "on-call", Kind: webhooks.DingTalk, URL: "https://oapi.dingtalk.com/robot/send?access_token=t", Secret: "SEC"}, audit.Actor{UserID: admins[0]})
	require.NoError(t, err)

	t0 := time.Now()
	var tokenID int64
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO edge_tokens (name, prefix, secret_hash) VALUES ('silent', 'kbe_silent', 'x') RETURNING id`).Scan(&tokenID))
	_, err = b.pool.Exec(ctx, `INSERT INTO edge_instances (token_id, name, applied_version, last_seen_at) VALUES ($1, 'silent', 'v', $2)`,
		tokenID, pgtype.Timestamptz{Time: t0.Add(-time.Hour), Valid: true})
	require.NoError(t, err)

	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{})
	require.NoError(t, err)
	w := &jobs.EdgeWatchWorker{Pool: b.pool, Box: box, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Notices: notify.Notices{Box: box}}
	w.Now = func() time.Time { return t0 }
	job := &river.Job[edge.WatchArgs]{JobRow: &rivertype.JobRow{Kind: edge.WatchArgs{}.Kind()}}
	require.NoError(t, w.Work(rivertest.WorkContext(ctx, client), job))

	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'webhook_delivery'
		AND (args->>'channel_id')::bigint = $1 AND args->>'event_kind' = 'edge_out_of_step' AND args->>'template' = $2`,
		ch.Channel.ID, notify.EmailEdgeOutOfStep).Scan(&n))
	require.Equal(t, 1, n)
}

// TestCleanupPrunesWebhookLog: the cleanup job deletes the delivery log's
// attempts older than 30 days, and only those.
func TestCleanupPrunesWebhookLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	q := queries.New(b.pool)
	user, err := q.UserCreate(ctx, queries.UserCreateParams{Email: "pruned@example.com", Name: "u", Role: "user"})
	require.NoError(t, err)
	svc := &webhooks.Service{Pool: b.pool, Box: box}
	ch, err := svc.Create(ctx, actingAs(t, b.pool, user.ID), "en", webhooks.Input{Name: "old", Kind: webhooks.Slack, URL: "https://hooks.slack.com/services/x"}, audit.Actor{UserID: user.ID})
	require.NoError(t, err)
	for _, age := range []string{"31 days", "29 days"} {
		_, err := b.pool.Exec(ctx, `INSERT INTO webhook_attempts (channel_id, event_id, event_kind, attempt, status, created_at)
			VALUES ($1, $2::text, 'test', 1, 'delivered', now() - $2::text::interval)`, ch.Channel.ID, age)
		require.NoError(t, err)
	}
	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.CleanupWorker{Pool: b.pool, Logger: b.logger})
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // the job row only
	_, err = w.Work(ctx, t, tx, jobs.CleanupArgs{}, nil)
	require.NoError(t, err)
	log, err := svc.Log(ctx, actingAs(t, b.pool, user.ID), ch.Channel.ID)
	require.NoError(t, err)
	require.Len(t, log, 1)
	require.Equal(t, "29 days", log[0].EventID)
}
