package notify_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/notify"
)

// TestDefaultFailuresGoEverywhere: a user who chose nothing hears of every
// kind of failure by email and webhook as well as in the console, managed
// ingress and host names as much as clusters; news that needs nothing of
// them stays in the console.
func TestDefaultFailuresGoEverywhere(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind notify.Kind
		out  bool // by email and webhook
	}{
		{notify.ClusterFailed, true},
		{notify.NodeNotReady, true},
		{notify.ControlPlane, true},
		{notify.Ingress, true},
		{notify.Hostname, true},
		{notify.Certificate, true},
		{notify.ClusterReady, false},
		{notify.JoinTokenUsed, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			t.Parallel()
			require.True(t, notify.Default(tt.kind, notify.InApp))
			require.Equal(t, tt.out, notify.Default(tt.kind, notify.Email))
			require.Equal(t, tt.out, notify.Default(tt.kind, notify.Webhook))
		})
	}
}
