package clusters_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestOverviewFigures checks the overview's figures against clusters in
// every state and their nodes: a deleted cluster and its nodes count for
// nothing, the fullest cluster's nodes are its own, the newest events are
// the live clusters', and a member of another organization, or of one
// with no clusters, reads zeros (and the plan of their own organization).
func TestOverviewFigures(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	u, _ := b.user(t, "figures@example.com")
	other, _ := b.user(t, "elsewhere@example.com")

	ids := map[string]int64{}
	cluster := func(name, status string, ready, notReady int) {
		t.Helper()
		var id int64
		require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
			VALUES ($1, $2, $3, 'v1.34.0', 'nodeport', $4) RETURNING id`, u.ID, name, "figures-"+name, status).Scan(&id))
		_, err := b.pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready, conditions, addresses)
			SELECT $1, 'node-' || i, i <= $2::int, '[]', '[]' FROM generate_series(1, $2::int + $3::int) i`, id, ready, notReady)
		require.NoError(t, err)
		_, err = b.pool.Exec(ctx, `INSERT INTO cluster_events (cluster_id, level, reason, message) VALUES ($1, 'info', 'Created', $2)`, id, "event of "+name)
		require.NoError(t, err)
		ids[name] = id
	}
	cluster("full", "ready", 2, 1)
	cluster("small", "ready", 1, 0)
	cluster("broken", "failed", 0, 0)
	cluster("coming", "pending", 0, 0)
	cluster("gone", "deleted", 5, 5)

	var plan string
	var maxClusters, maxNodes int32
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT p.name, p.max_clusters, p.max_nodes_per_cluster
		FROM plans p JOIN subscriptions s ON s.plan_id = p.id JOIN organizations o ON o.id = s.org_id
		WHERE o.personal_of = $1`, u.ID).Scan(&plan, &maxClusters, &maxNodes))

	o, err := b.svc.Overview(ctx, actingAs(t, b.pool, u.ID), 8)
	require.NoError(t, err)
	require.Equal(t, queries.OverviewForMemberRow{
		Clusters: 4, ClustersReady: 2, ClustersInProgress: 1, ClustersFailed: 1,
		Nodes: 4, NodesReady: 3, NodesMostInACluster: 3,
		PlanMaxClusters: maxClusters, PlanMaxNodesPerCluster: maxNodes, PlanName: plan,
		HasNode: true,
	}, o.Figures)
	require.Len(t, o.Clusters, 4)
	nodes := map[string][2]int64{}
	for _, c := range o.Clusters {
		nodes[c.Name] = [2]int64{c.Nodes, c.NodesReady}
	}
	require.Equal(t, map[string][2]int64{"full": {3, 2}, "small": {1, 1}, "broken": {0, 0}, "coming": {0, 0}}, nodes)
	var events []string
	for _, e := range o.Events {
		require.Equal(t, ids[e.ClusterName], e.ClusterID)
		require.Equal(t, "info", e.Level)
		require.Equal(t, "Created", e.Reason)
		var stored time.Time
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT created_at FROM cluster_events WHERE id = $1`, e.ID).Scan(&stored))
		require.True(t, stored.Equal(e.CreatedAt), "created at %v, read as %v", stored, e.CreatedAt)
		events = append(events, e.Message)
	}
	require.Equal(t, []string{"event of coming", "event of broken", "event of small", "event of full"}, events, "newest first, none of the deleted cluster")
	o, err = b.svc.Overview(ctx, actingAs(t, b.pool, u.ID), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"coming", "broken"}, []string{o.Clusters[0].Name, o.Clusters[1].Name}, "the newest, as many as asked")
	require.Len(t, o.Events, 2)
	// A cluster with more new events than the overview shows fills it
	// alone, in order, over the other clusters' older ones.
	for i := range 3 {
		_, err = b.pool.Exec(ctx, `INSERT INTO cluster_events (cluster_id, level, reason, message) VALUES ($1, 'info', 'Created', $2)`, ids["full"], fmt.Sprintf("later %d of full", i))
		require.NoError(t, err)
	}
	o, err = b.svc.Overview(ctx, actingAs(t, b.pool, u.ID), 2)
	require.NoError(t, err)
	events = events[:0]
	for _, e := range o.Events {
		events = append(events, e.Message)
	}
	require.Equal(t, []string{"later 2 of full", "later 1 of full"}, events)
	o, err = b.svc.Overview(ctx, actingAs(t, b.pool, u.ID), 5)
	require.NoError(t, err)
	events = events[:0]
	for _, e := range o.Events {
		events = append(events, e.Message)
	}
	require.Equal(t, []string{"later 2 of full", "later 1 of full", "later 0 of full", "event of coming", "event of broken"}, events)

	// Someone else's organization, which has no clusters: zeros, and its
	// own plan.
	none := queries.OverviewForMemberRow{PlanMaxClusters: maxClusters, PlanMaxNodesPerCluster: maxNodes, PlanName: plan}
	o, err = b.svc.Overview(ctx, actingAs(t, b.pool, other.ID), 8)
	require.NoError(t, err)
	require.Equal(t, none, o.Figures)
	require.Empty(t, o.Clusters)
	require.Empty(t, o.Events)

	// Not a member of the organization named: nothing of its clusters.
	peek := actingAs(t, b.pool, u.ID)
	peek.UserID = other.ID
	o, err = b.svc.Overview(ctx, peek, 8)
	require.NoError(t, err)
	require.Zero(t, o.Figures.Clusters)
	require.Zero(t, o.Figures.Nodes)
	require.False(t, o.Figures.HasNode)
	require.Empty(t, o.Clusters)
	require.Empty(t, o.Events)

	// A viewer's role reads them too.
	viewer := actingAs(t, b.pool, u.ID)
	viewer.Cap = orgs.Viewer
	o, err = b.svc.Overview(ctx, viewer, 8)
	require.NoError(t, err)
	require.EqualValues(t, 4, o.Figures.Clusters)
}
