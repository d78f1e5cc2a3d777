package bearer_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/bearer"
)

// TestKinds checks that each kind makes secrets of its own shape, reads
// them back from a header, and refuses another kind's.
func TestKinds(t *testing.T) {
	t.Parallel()
	keys, edges := bearer.Kind{Prefix: "kbn_"}, bearer.Kind{Prefix: "kbe_"}
	for _, tt := range []struct {
		kind, other bearer.Kind
	}{{keys, edges}, {edges, keys}} {
		secret, prefix := tt.kind.New()
		require.True(t, tt.kind.WellFormed(secret), secret)
		require.False(t, tt.other.WellFormed(secret), secret)
		require.Equal(t, prefix, tt.kind.PrefixOf(secret))
		require.Len(t, prefix, len(tt.kind.Prefix)+8)
		got, ok := tt.kind.Parse("bearer " + secret)
		require.True(t, ok)
		require.Equal(t, secret, got)
		_, ok = tt.other.Parse("Bearer " + secret)
		require.False(t, ok)
		again, _ := tt.kind.New()
		require.NotEqual(t, secret, again)
		require.Len(t, bearer.Hash(secret), 64)
		require.NotEqual(t, bearer.Hash(secret), bearer.Hash(again))
	}
}
