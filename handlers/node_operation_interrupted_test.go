package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/nodes"
)

// TestNodeOperationInterrupted: an operation whose worker stopped (the
// cleanup job writes nodes.OperationInterrupted) says so in the reader's
// language, not in the recorded English; kubectl's own messages are shown
// as they were said.
func TestNodeOperationInterrupted(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "op-interrupted")
	id := b.InsertCluster(t, b.UserID(t, email), "ops", "ops-k3l4m5", "v1.34.0", "nodeport", "ready")
	for _, tc := range []struct {
		message, shown, hidden string
	}{
		{nodes.OperationInterrupted, "Interrupted: the worker stopped before the operation finished, and it will not be retried.", nodes.OperationInterrupted},
		{"cannot delete Pods that declare no controller", "cannot delete Pods that declare no controller", "Interrupted:"},
	} {
		var op int64
		require.NoError(t, b.Pool.QueryRow(context.Background(), `INSERT INTO node_operations (cluster_id, node_name, kind, status, message)
			VALUES ($1, 'worker-1', 'drain', 'failed', $2) RETURNING id`, id, tc.message).Scan(&op))
		code, body := c.Get(fmt.Sprintf("/clusters/%d/nodes/worker-1/operations/%d", id, op))
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, tc.shown)
		require.NotContains(t, body, tc.hidden)
	}
}
