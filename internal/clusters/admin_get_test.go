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
		names, err := s.NodeNames(ctx, tt.owner, id)
		require.NoError(t, err, tt.name)
		require.ElementsMatch(t, tt.want, names, tt.name)
	}
}
