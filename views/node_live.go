package views

import (
	"context"
	"time"

	"github.com/kubebyon/kubebyon/internal/locale"
)

// NodeLive is the part of a node's page that refreshes itself: the node's
// state, resources, taints, labels and pods. Gone: the node has left the
// cluster, which ends the refreshing. Error is the catalog message shown
// while the state cannot be read.
type NodeLive struct {
	ClusterID  int64
	Node       Node
	Conditions []NodeCondition
	Resources  []NodeResource
	Taints     []string
	Labels     []string
	Pods       []NodePod
	Gone       bool
	Error      string
	// Recorded: the control plane did not answer (Error says so), and the
	// node is shown as the nodes table last recorded it, at Seen: its
	// state and conditions only.
	Recorded bool
	Seen     time.Time
}

// nodeAge is how long ago something began, in its largest whole unit as
// kubectl shows ages, up to hours for the first two days.
func nodeAge(ctx context.Context, d time.Duration) string {
	switch {
	case d < time.Minute:
		return locale.T(ctx, "NodeAgeSeconds", map[string]any{"N": int(max(d, 0) / time.Second)})
	case d < time.Hour:
		return locale.T(ctx, "NodeAgeMinutes", map[string]any{"N": int(d / time.Minute)})
	case d < 48*time.Hour:
		return locale.T(ctx, "NodeAgeHours", map[string]any{"N": int(d / time.Hour)})
	}
	return locale.T(ctx, "NodeAgeDays", map[string]any{"N": int(d / (24 * time.Hour))})
}
