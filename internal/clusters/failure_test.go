package clusters_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/queries"
)

// TestFailureMessage: a recorded error names the message that explains it
// to the owner; one that says nothing known gets the generic one.
func TestFailureMessage(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"": "",
		"no host cluster is configured: an admin connects one in Admin → Settings":                  clusters.FailureNoHost,
		"the control plane did not become ready within 10m0s (dial tcp 10.96.0.1:443: i/o timeout)": clusters.FailureNotReadyInTime,
		`Get "https://10.0.0.5:6443/api": dial tcp 10.0.0.5:6443: connect: connection refused`:      clusters.FailureHostUnreachable,
		"lookup host.internal on 10.96.0.10:53: no such host":                                       clusters.FailureHostUnreachable,
		"helm install: timed out waiting for the condition":                                         clusters.FailureInstall,
		"pods is forbidden: exceeded quota: compute-resources":                                      clusters.FailureQuota,
		"something else went wrong":                                                                 clusters.FailureGeneric,
	} {
		require.Equal(t, want, clusters.FailureMessage(raw), raw)
	}
}

// TestPendingRetryForMember: River's retry of a failed cluster is told to
// the cluster's organization only; the query, not its caller, checks.
func TestPendingRetryForMember(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	u, a := b.user(t, "retried@example.com")
	o, _ := b.user(t, "peeker@example.com")
	c, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "retried"}, a)
	require.NoError(t, err)
	require.NoError(t, queries.New(b.pool).ClusterMarkFailed(ctx, queries.ClusterMarkFailedParams{ID: c.ID, StatusMessage: "refused"}))
	tag, err := b.pool.Exec(ctx, `UPDATE river_job SET state = 'retryable', attempt = 2, max_attempts = 25,
errors = ARRAY['{"attempt":2,"error":"refused"}'::jsonb]
WHERE kind = 'cluster_reconcile' AND (args->>'cluster_id')::bigint = $1`, c.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())

	r, ok, err := b.svc.PendingRetry(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, clusters.Retry{Attempt: 3, MaxAttempts: 25}, r)

	_, ok, err = b.svc.PendingRetry(ctx, actingAs(t, b.svc.Pool, o.ID), c.ID)
	require.NoError(t, err)
	require.False(t, ok, "another's cluster's retry is not told")
	all, err := b.svc.PendingRetries(ctx, actingAs(t, b.svc.Pool, u.ID))
	require.NoError(t, err)
	require.Equal(t, map[int64]clusters.Retry{c.ID: {Attempt: 3, MaxAttempts: 25}}, all)
	all, err = b.svc.PendingRetries(ctx, actingAs(t, b.svc.Pool, o.ID))
	require.NoError(t, err)
	require.Empty(t, all)
}
