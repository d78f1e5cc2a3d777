package jobs_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/opswatch"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestOpsWatch: jobs that failed for good are told to the admins (never
// to users), those from before the watch first ran are not, a user's
// failing webhook deliveries are not, and failures close together make
// one alert; the host cluster (a real apiserver) is told of once when it
// stops answering for three checks in a row, and once when it answers
// again; without a host cluster there is nothing to tell.
func TestOpsWatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	admin, err := q.UserCreate(ctx, queries.UserCreateParams{Email: "ops-admin@example.com", Name: "a", Role: "admin"})
	require.NoError(t, err)
	user, err := q.UserCreate(ctx, queries.UserCreateParams{Email: "ops-user@example.com", Name: "u", Role: "user"})
	require.NoError(t, err)

	discard := func(kind, msg string, at time.Time) {
		t.Helper()
		_, err := b.pool.Exec(ctx, `INSERT INTO river_job (kind, args, max_attempts, attempt, state, finalized_at, errors)
			VALUES ($1, '{}', 3, 3, 'discarded', $2, ARRAY[jsonb_build_object('error', $3::text, 'attempt', 3)])`, kind, at, msg)
		require.NoError(t, err)
	}
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{})
	require.NoError(t, err)
	// No host cluster at first: the host check of the real worker finds
	// none (a test process is not in a cluster).
	w := &jobs.OpsWatchWorker{Pool: b.pool, Box: box, Logger: b.logger, Notices: notify.Notices{Box: box}}
	run := func(at time.Time) {
		t.Helper()
		w.Now = func() time.Time { return at }
		job := &river.Job[opswatch.WatchArgs]{JobRow: &rivertype.JobRow{Kind: opswatch.WatchArgs{}.Kind()}}
		require.NoError(t, w.Work(rivertest.WorkContext(ctx, client), job))
	}
	told := func(userID int64) []string {
		t.Helper()
		rows, err := b.pool.Query(ctx, `SELECT message || ':' || coalesce(params->>'Jobs', params->>'Minutes', '') FROM notifications
			WHERE user_id = $1 AND kind = $2 ORDER BY id`, userID, string(notify.PlatformHealth))
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

	t0 := time.Now().Add(-time.Hour)
	discard("cluster_reconcile", "old failure", t0.Add(-time.Minute))
	run(t0)
	require.Empty(t, told(admin.ID), "failures from before the first watch are not news")

	discard("cluster_reconcile", "helm install: timed out", t0.Add(30*time.Second))
	discard("email", "dial tcp: connection refused", t0.Add(40*time.Second))
	discard("webhook", "a user's endpoint answered 500", t0.Add(50*time.Second))
	run(t0.Add(time.Minute))
	require.Equal(t, []string{opswatch.TemplateJobsFailing + ":2"}, told(admin.ID), "two failed jobs, the webhook not counted")
	require.Empty(t, told(user.ID), "users are never told")
	var kinds, lastError string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT params->>'Kinds', params->>'LastError' FROM notifications WHERE user_id = $1 AND kind = $2`,
		admin.ID, string(notify.PlatformHealth)).Scan(&kinds, &lastError))
	require.Equal(t, "cluster_reconcile (1), email (1)", kinds)
	require.Contains(t, []string{"helm install: timed out", "dial tcp: connection refused"}, lastError)
	var emails int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'email' AND args->>'template' = $1`, notify.EmailJobsFailing).Scan(&emails))
	require.Equal(t, 1, emails, "by email too, as the default preference says")

	// Failures a few minutes later wait for the next alert, which counts
	// them all.
	discard("ingress_reconcile", "x", t0.Add(2*time.Minute))
	run(t0.Add(3 * time.Minute))
	discard("ingress_reconcile", "y", t0.Add(4*time.Minute))
	run(t0.Add(5 * time.Minute))
	require.Len(t, told(admin.ID), 1, "one alert per quarter of an hour at most")
	run(t0.Add(time.Minute + opswatch.JobsEvery))
	require.Equal(t, []string{opswatch.TemplateJobsFailing + ":2", opswatch.TemplateJobsFailing + ":2"}, told(admin.ID))
	run(t0.Add(2*time.Minute + 2*opswatch.JobsEvery))
	require.Len(t, told(admin.ID), 2, "nothing new failed")

	// A host cluster that answers, then one that does not (the same
	// apiserver's kubeconfig with a port nothing listens on).
	host := testenv.HostKube(t)
	kubecfg := filepath.Join(t.TempDir(), "host.kubeconfig")
	good := host.Kubeconfig(t)
	require.NoError(t, os.WriteFile(kubecfg, good, 0o600))
	w.KubeconfigPath = kubecfg
	t1 := t0.Add(time.Hour)
	run(t1)
	bad := regexp.MustCompile(`server: https://[^\s]+`).ReplaceAll(good, []byte("server: https://127.0.0.1:1"))
	require.NotEqual(t, good, bad)
	require.NoError(t, os.WriteFile(kubecfg, bad, 0o600))
	for i := range opswatch.HostFailuresBeforeAlert - 1 {
		run(t1.Add(time.Duration(i+1) * time.Minute))
	}
	require.Len(t, told(admin.ID), 2, "two failed checks are not an outage")
	run(t1.Add(3 * time.Minute))
	run(t1.Add(4 * time.Minute))
	require.Equal(t, opswatch.TemplateHostUnreachable+":2", told(admin.ID)[2], "told once, with the minutes since the first failure")
	require.Len(t, told(admin.ID), 3)
	require.NoError(t, os.WriteFile(kubecfg, good, 0o600))
	run(t1.Add(6 * time.Minute))
	run(t1.Add(7 * time.Minute))
	require.Equal(t, []string{opswatch.TemplateHostReachable + ":5"}, told(admin.ID)[3:], "back, once")
}
