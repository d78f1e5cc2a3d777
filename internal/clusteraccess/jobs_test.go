package clusteraccess_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusteraccess"
)

// TestRevokeQueue: revocations go in the checks queue, whose concurrency
// bounds per-cluster work, though the package says its name again.
func TestRevokeQueue(t *testing.T) {
	t.Parallel()
	require.Equal(t, checks.Queue, clusteraccess.Queue)
	require.Equal(t, checks.Queue, clusteraccess.RevokeArgs{}.InsertOpts().Queue)
}
