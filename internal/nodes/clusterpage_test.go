package nodes

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestClusterPageEvents checks that the cluster page's one query brings
// the same events, field for field, as the timeline's own query
// (clusters.Service.LatestEvents): the newest TimelineLength, oldest
// first, a repeated event with its count and last sighting; and none of
// another organization's cluster, which is not found.
func TestClusterPageEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	var clusterID, ownerID, otherID int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO users (email, name) VALUES ('page@example.com', 'Page') RETURNING id`).Scan(&ownerID))
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO users (email, name) VALUES ('else@example.com', 'Else') RETURNING id`).Scan(&otherID))
	require.NoError(t, pool.QueryRow(ctx, `
		INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		VALUES ($1, 'page', 'page-events', 'v1.34.0', 'nodeport', 'ready') RETURNING id`, ownerID).Scan(&clusterID))
	svc := &Service{Pool: pool}
	owner := actingAs(t, pool, ownerID)

	_, page, err := svc.ClusterPage(ctx, owner, clusterID, clusters.TimelineLength)
	require.NoError(t, err)
	require.Empty(t, page.Events, "no events yet")

	for i := range clusters.TimelineLength + 5 {
		_, err := pool.Exec(ctx, `INSERT INTO cluster_events (cluster_id, level, reason, message) VALUES ($1, 'info', 'Step', $2)`, clusterID, fmt.Sprint("step ", i))
		require.NoError(t, err)
	}
	_, err = pool.Exec(ctx, `INSERT INTO cluster_events (cluster_id, level, reason, message, count, last_seen_at)
		VALUES ($1, 'warning', 'Waiting', 'still waiting', 7, now())`, clusterID)
	require.NoError(t, err)

	cl, page, err := svc.ClusterPage(ctx, owner, clusterID, clusters.TimelineLength)
	require.NoError(t, err)
	require.Equal(t, "page", cl.Name)
	want, err := (&clusters.Service{Pool: pool}).LatestEvents(ctx, owner, clusterID)
	require.NoError(t, err)
	require.Len(t, page.Events, clusters.TimelineLength)
	require.Len(t, want, clusters.TimelineLength)
	for i := range want {
		w, g := want[i], page.Events[i]
		require.True(t, w.CreatedAt.Time.Equal(g.CreatedAt.Time), "event %d created at %v, read as %v", w.ID, w.CreatedAt.Time, g.CreatedAt.Time)
		require.Equal(t, w.LastSeenAt.Valid, g.LastSeenAt.Valid)
		require.True(t, w.LastSeenAt.Time.Equal(g.LastSeenAt.Time))
		g.CreatedAt, g.LastSeenAt = w.CreatedAt, w.LastSeenAt // equal instants, compared above
		require.Equal(t, w, g)
	}
	require.Equal(t, "step 6", page.Events[0].Message, "the oldest shown")
	last := page.Events[len(page.Events)-1]
	require.Equal(t, "still waiting", last.Message, "the newest last")
	require.EqualValues(t, 7, last.Count)
	require.True(t, last.LastSeenAt.Valid)

	_, _, err = svc.ClusterPage(ctx, orgs.Acting{OrgID: owner.OrgID, UserID: otherID, Cap: owner.Cap}, clusterID, clusters.TimelineLength)
	require.ErrorIs(t, err, clusters.ErrNotFound)
}
