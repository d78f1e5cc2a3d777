package vcluster_test

import (
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/queries"
)

func TestValues(t *testing.T) {
	t.Parallel()
	rt := settings.Defaults()
	rt.APIBaseDomain = "k.example.com"
	c := queries.Cluster{ID: 1, Name: "dev", Slug: "dev-abc123", KubernetesVersion: "v1.34.0", PublicAccessMode: "nodeport", NodePort: pgtype.Int4{Int32: 31443, Valid: true}, KonnectivityNodePort: pgtype.Int4{Int32: 31444, Valid: true}}
	v, err := vcluster.Values(c, rt)
	require.NoError(t, err)
	b, _ := json.MarshalIndent(v, "", "  ")
	t.Logf("%s", b)
	networking := func(v map[string]any) map[string]any {
		t.Helper()
		n, ok := v["networking"].(map[string]any)
		require.True(t, ok, "networking values")
		return n
	}
	require.Equal(t, rt.PodCIDR, networking(v)["podCIDR"], "a cluster row without a network: the settings'")
	require.Equal(t, rt.ServiceCIDR, networking(v)["serviceCIDR"])

	// A cluster's own Pod network wins over the settings, which may have
	// changed since it was made.
	c.PodCidr = netip.MustParsePrefix("10.128.16.0/20")
	rt.PodCIDR = "10.99.0.0/16"
	v, err = vcluster.Values(c, rt)
	require.NoError(t, err)
	require.Equal(t, "10.128.16.0/20", networking(v)["podCIDR"])
}
