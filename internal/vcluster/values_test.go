package vcluster_test

import (
	"encoding/json"
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
}
