package views

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProvisionSteps(t *testing.T) {
	t.Parallel()
	ev := func(reasons ...string) []string { return reasons }
	states := func(steps []ProgressStep) []string {
		var out []string
		for _, s := range steps {
			out = append(out, s.State)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		status string
		events []string
		want   []string
		shown  bool
	}{
		{"requested", "pending", ev("Requested"), []string{"done", "current", "todo", "todo"}, true},
		{"installing", "provisioning", ev("Requested", "Provisioning"), []string{"done", "current", "todo", "todo"}, true},
		{"waiting", "provisioning", ev("Requested", "Provisioning", "Installing", "WaitingForControlPlane"), []string{"done", "done", "current", "todo"}, true},
		{"failed waiting", "failed", ev("Requested", "Installing", "WaitingForControlPlane", "Failed"), []string{"done", "done", "failed", "todo"}, true},
		{"failed installing", "failed", ev("Requested", "Failed"), []string{"done", "failed", "todo", "todo"}, true},
		{"retrying", ClusterStatusRetrying, ev("Requested", "Installing", "Failed"), []string{"done", "done", "current", "todo"}, true},
		{"ready", "ready", ev("Requested", "Installing", "Ready"), []string{"done", "done", "done", "done"}, false},
		{"failed after ready", "failed", ev("Requested", "Installing", "Ready", "Upgrading", "Failed"), []string{"done", "done", "done", "done"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, states(provisionSteps(tc.status, tc.events)))
			require.Equal(t, tc.shown, showsProgress(tc.status, tc.events))
		})
	}
}
