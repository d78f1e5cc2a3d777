package clusters_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAdminGetAndNodeNames: an admin reads any cluster with its owner and
// nodes; a user reads the node names of their own cluster only.
func TestAdminGetAndNodeNames(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	var owner, other, id int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO users (email, name) VALUES ('owner@example.com', 'Owner') RETURNING id`).Scan(&owner))
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO users (email, name) VALUES ('other@example.com', 'Other') RETURNING id`).Scan(&other))
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		VALUES ($1, 'shop', 'shop-a1b2c3', 'v1.34.0', 'nodeport', 'ready') RETURNING id`, owner).Scan(&id))
	_, err := pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready, conditions, addresses)
		VALUES ($1, 'node-1', true, '[]', '[]'), ($1, 'node-2', false, '[]', '[]')`, id)
	require.NoError(t, err)
	s := &clusters.Service{Pool: pool}

	d, err := s.AdminGet(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "shop", d.Cluster.Name)
	require.Equal(t, "owner@example.com", d.Owner.Email)
	require.Len(t, d.Nodes, 2)
	require.Empty(t, d.Alerts)
	require.Empty(t, d.Tokens)
	_, err = s.AdminGet(ctx, id+1000)
	require.ErrorIs(t, err, clusters.ErrNotFound)

	tests := []struct {
		name  string
		owner int64
		want  []string
	}{
		{"the owner's", owner, []string{"node-1", "node-2"}},
		{"another user's", other, nil},
	}
	for _, tt := range tests {
		names, err := s.NodeNames(ctx, actingAs(t, s.Pool, tt.owner), id)
		require.NoError(t, err, tt.name)
		require.ElementsMatch(t, tt.want, names, tt.name)
	}
}

// TestAdminListOlderPages: the admins' list read a limit at a time,
// newest first, under its filter; a filter no cluster can match is
// refused by Validate.
func TestAdminListOlderPages(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	var owner int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO users (email, name) VALUES ('owner@example.com', 'Owner') RETURNING id`).Scan(&owner))
	_, err := pool.Exec(ctx, `INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		SELECT $1, 'c-' || i, 'c-' || i || '-x', 'v1.34.0', 'nodeport', CASE WHEN i = 3 THEN 'failed' ELSE 'ready' END
		FROM generate_series(1, 5) i`, owner)
	require.NoError(t, err)
	s := &clusters.Service{Pool: pool}

	var names []string
	before := int64(0)
	for {
		p, err := s.AdminListOlder(ctx, clusters.AdminFilter{Status: clusters.StatusReady}, before, 2)
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Clusters), 2)
		for _, c := range p.Clusters {
			names = append(names, c.Name)
		}
		if p.Older == 0 {
			break
		}
		before = p.Older
	}
	require.Equal(t, []string{"c-5", "c-4", "c-2", "c-1"}, names)

	require.NoError(t, clusters.AdminFilter{Status: clusters.StatusDeleted, AccessMode: "loadbalancer"}.Validate())
	require.Equal(t, clusters.FieldErrors{"status": "ErrAdminClusterFilterStatus", "access": "ErrClusterAccessMode"},
		clusters.AdminFilter{Status: "broken", AccessMode: "ingress"}.Validate())
}
