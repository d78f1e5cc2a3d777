package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/queries"
)

// TestClusterRetryShown: a failed cluster whose reconcile job River still
// retries reads "Retrying (attempt 3 of 25)" and stays watched, with the
// failure in plain words and the raw error folded away; once no retry
// remains it reads Failed and the page stops polling.
func TestClusterRetryShown(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "retrying")
	cl := b.NewCluster(t, c, "bumpy")
	path := fmt.Sprintf("/clusters/%d", cl.ID)
	raw := `Get "https://10.0.0.5:6443/api": dial tcp 10.0.0.5:6443: connect: connection refused`
	require.NoError(t, queries.New(b.Pool).ClusterMarkFailed(ctx, queries.ClusterMarkFailedParams{ID: cl.ID, StatusMessage: raw}))
	// As River leaves the job after its second failed attempt.
	tag, err := b.Pool.Exec(ctx, `UPDATE river_job SET state = 'retryable', attempt = 2, max_attempts = 25,
errors = ARRAY['{"at":"2020-01-01T00:00:00Z","attempt":2,"error":"refused"}'::jsonb]
WHERE kind = 'cluster_reconcile' AND (args->>'cluster_id')::bigint = $1`, cl.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())

	code, page := c.Get(path)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, `data-status="retrying"`)
	require.NotContains(t, page, `data-status="failed"`)
	require.Contains(t, page, `data-testid="cluster-retry-attempt" data-attempt="3" data-max-attempts="25"`)
	require.Contains(t, page, "Retrying (attempt 3 of 25)")
	require.Contains(t, page, `data-failure="ClusterFailureHostUnreachable"`)
	require.Contains(t, page, "could not reach the host cluster")
	require.Regexp(t, `data-testid="error-details">[\s\S]*10.0.0.5:6443`, page)
	require.Contains(t, page, "cluster-poller", "a retrying cluster is watched")
	resp, frag := c.HTMX(path + "/events?after=0")
	require.Equal(t, http.StatusOK, resp.StatusCode, "not settled while retrying")
	require.Contains(t, frag, "Retrying (attempt 3 of 25)")
	// The list and the overview say so too, and count it in progress.
	for _, p := range []string{"/clusters", "/"} {
		_, page = c.Get(p)
		require.Contains(t, page, `data-status="retrying"`, p)
		require.NotContains(t, page, `data-status="failed"`, p)
	}
	require.Contains(t, page, "1 in progress", "the overview counts it in progress")
	require.NotContains(t, page, "1 failed")

	// No retry left: River discarded the job.
	_, err = b.Pool.Exec(ctx, `UPDATE river_job SET state = 'discarded', attempt = 25, finalized_at = now()
WHERE kind = 'cluster_reconcile' AND (args->>'cluster_id')::bigint = $1`, cl.ID)
	require.NoError(t, err)
	_, page = c.Get(path)
	require.Contains(t, page, `data-status="failed"`)
	require.NotContains(t, page, `data-testid="cluster-retry-attempt"`)
	require.NotContains(t, page, "cluster-poller")
	resp, _ = c.HTMX(path + "/events?after=0")
	require.Equal(t, 286, resp.StatusCode)
	_, page = c.Get("/clusters")
	require.Contains(t, page, `data-status="failed"`)
}
