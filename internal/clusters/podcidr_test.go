package clusters_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// TestPodCIDRPool: with a pool set, clusters created at the same instant
// by different users get Pod networks of the pool's block size that never
// overlap; a full pool is a clear error; a deleted cluster's block is free
// again; the database itself refuses two overlapping pooled blocks.
func TestPodCIDRPool(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	rt, err := settings.Load(ctx, q, b.box)
	require.NoError(t, err)
	// Eight /28 blocks.
	rt.PodCIDRPool, rt.PodCIDRBlock = "10.128.0.0/25", 28
	require.NoError(t, rt.Validate())
	require.NoError(t, settings.Save(ctx, q, b.box, rt))
	pool := netip.MustParsePrefix(rt.PodCIDRPool)

	const n = 8
	got := make([]queries.Cluster, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		u, a := b.user(t, fmt.Sprintf("racer%d@example.com", i))
		wg.Go(func() {
			got[i], errs[i] = b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "web", PublicAccessMode: settings.AccessLoadBalancer}, a)
		})
	}
	wg.Wait()
	seen := map[netip.Prefix]bool{}
	for i := range n {
		require.NoError(t, errs[i], "creation %d", i)
		c, err := q.ClusterGetByID(ctx, got[i].ID)
		require.NoError(t, err)
		require.Equal(t, got[i].PodCidr, c.PodCidr, "Create returns the network it stored")
		require.True(t, c.PodCidrPooled)
		require.Equal(t, 28, c.PodCidr.Bits())
		require.True(t, pool.Contains(c.PodCidr.Addr()), "%s is in the pool", c.PodCidr)
		require.False(t, seen[c.PodCidr], "%s given twice", c.PodCidr)
		seen[c.PodCidr] = true
	}
	require.Zero(t, b.count(t, `SELECT count(*) FROM clusters a JOIN clusters b ON a.id < b.id AND a.pod_cidr && b.pod_cidr`), "no two networks overlap")
	for _, c := range got {
		unique, err := q.ClusterPodCIDRUnique(ctx, c.ID)
		require.NoError(t, err)
		require.True(t, unique)
	}

	// Full: a clear error, and nothing written.
	u, a := b.user(t, "late@example.com")
	_, err = b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "late", PublicAccessMode: settings.AccessLoadBalancer}, a)
	require.ErrorIs(t, err, clusters.ErrPodPoolFull)
	require.Zero(t, b.count(t, `SELECT count(*) FROM clusters WHERE owner_id = $1`, u.ID))

	// A deleted cluster's block is free again.
	require.NoError(t, q.ClusterMarkDeleted(ctx, got[3].ID))
	c, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "late", PublicAccessMode: settings.AccessLoadBalancer}, a)
	require.NoError(t, err)
	require.Equal(t, got[3].PodCidr, c.PodCidr)

	// Not a check in Go: the database refuses an overlap however written.
	_, err = b.pool.Exec(ctx, `UPDATE clusters SET pod_cidr = '10.128.0.0/24' WHERE id = $1`, got[0].ID)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "23P01", pgErr.Code, "exclusion violation")
}

// TestPodCIDRWithoutPool: without a pool every new cluster gets the
// settings' one Pod network, shared, so none of them is unique; a legacy
// network overlapping the pool keeps pooled clusters off it.
func TestPodCIDRWithoutPool(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	rt, err := settings.Load(ctx, q, b.box)
	require.NoError(t, err)
	rt.PodCIDRPool, rt.PodCIDR = "", "10.250.0.0/16"
	require.NoError(t, settings.Save(ctx, q, b.box, rt))
	u, a := b.user(t, "plain@example.com")
	one, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "one", PublicAccessMode: settings.AccessLoadBalancer}, a)
	require.NoError(t, err)
	require.Equal(t, netip.MustParsePrefix("10.250.0.0/16"), one.PodCidr)
	require.False(t, one.PodCidrPooled)
	unique, err := q.ClusterPodCIDRUnique(ctx, one.ID)
	require.NoError(t, err)
	require.True(t, unique, "alone, it is unique")
	two, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "two", PublicAccessMode: settings.AccessLoadBalancer}, a)
	require.NoError(t, err)
	require.Equal(t, one.PodCidr, two.PodCidr)
	for _, c := range []queries.Cluster{one, two} {
		unique, err := q.ClusterPodCIDRUnique(ctx, c.ID)
		require.NoError(t, err)
		require.False(t, unique, "shared")
	}

	// A pool that holds the shared network allocates around it.
	rt.PodCIDRPool, rt.PodCIDRBlock = "10.250.0.0/15", 16
	require.NoError(t, settings.Save(ctx, q, b.box, rt))
	three, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "three", PublicAccessMode: settings.AccessLoadBalancer}, a)
	require.NoError(t, err)
	require.Equal(t, netip.MustParsePrefix("10.251.0.0/16"), three.PodCidr)
}

// TestPodPoolSettings: the pool settings the admin may save.
func TestPodPoolSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pool  string
		block int
		field string
		msg   string
	}{
		{"10.128.0.0/9", 20, "", ""},
		{"", 0, "", ""},
		{"10.128.0.1/9", 20, "podCIDRPool", "ErrSettingPodPool"},
		{"fd00::/48", 64, "podCIDRPool", "ErrSettingPodPool"},
		{"not a network", 20, "podCIDRPool", "ErrSettingPodPool"},
		{"10.128.0.0/9", 8, "podCIDRBlock", "ErrSettingPodBlock"},
		{"10.128.0.0/9", 29, "podCIDRBlock", "ErrSettingPodBlock"},
		{"10.0.0.0/8", 29, "podCIDRBlock", "ErrSettingPodBlock"},
		{"100.0.0.0/7", 28, "podCIDRBlock", "ErrSettingPodBlock"},
		{"10.96.0.0/12", 20, "podCIDRPool", "ErrSettingPodPoolOverlap"},
	} {
		t.Run(fmt.Sprintf("%s_%d", tc.pool, tc.block), func(t *testing.T) {
			t.Parallel()
			rt := settings.Defaults()
			rt.PodCIDRPool, rt.PodCIDRBlock = tc.pool, tc.block
			err := rt.Validate()
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			var errs settings.FieldErrors
			require.ErrorAs(t, err, &errs)
			require.Equal(t, tc.msg, errs[tc.field], "%v", errs)
		})
	}
}
