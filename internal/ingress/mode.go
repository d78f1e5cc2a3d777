package ingress

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/queries"
)

// The ways a cluster's managed ingress is reached (cluster_ingress.mode).
const (
	// ModeDirect: the internet reaches the user's ingress nodes.
	ModeDirect = "direct"
	// ModeEdge: the internet reaches the platform's shared Gateway on the
	// host cluster, which forwards to the tenant's controller pods over
	// the routes the route agents keep.
	ModeEdge = "edge"
)

// Errors users see (catalog message IDs).
var (
	ErrMode              = errors.New("ErrIngressMode")
	ErrEdgeNotConfigured = errors.New("ErrIngressEdgeNotConfigured")
	ErrPodCIDRShared     = errors.New("ErrIngressEdgePodCIDRShared")
)

// edgeOffer is why the platform edge cannot be chosen for c (one of the
// errors above), or nil when it can: the admin named the shared
// Gateway's class, and no other cluster's Pod network overlaps c's.
func edgeOffer(ctx context.Context, q *queries.Queries, st Settings, c queries.Cluster) (error, error) {
	if st.GatewayClass == "" {
		return ErrEdgeNotConfigured, nil
	}
	unique, err := q.ClusterPodCIDRUnique(ctx, c.ID)
	if err != nil {
		return nil, fmt.Errorf("compare the pod network of cluster %d: %w", c.ID, err)
	}
	if !unique {
		return ErrPodCIDRShared, nil
	}
	return nil, nil
}

// SetMode chooses how the cluster's managed ingress is reached: the row,
// a cluster event, the audit event and the reconcile job, in one
// transaction. The platform edge needs what edgeOffer checks; going back
// to direct is always allowed. Choosing the mode it has changes nothing.
func (s *Service) SetMode(ctx context.Context, c queries.Cluster, mode string, actor audit.Actor) (State, error) {
	return s.change(ctx, c, func(tx pgx.Tx) error { return s.SetModeTx(ctx, tx, c, mode, actor) })
}

// SetModeTx is SetMode in the caller's transaction (a clusters.Edit
// step), under the cluster's lock for a change (lockForChange).
func (s *Service) SetModeTx(ctx context.Context, tx pgx.Tx, c queries.Cluster, mode string, actor audit.Actor) error {
	if mode != ModeDirect && mode != ModeEdge {
		return ErrMode
	}
	q := queries.New(tx)
	st, err := lockForChange(ctx, q, c)
	if err != nil {
		return err
	}
	if mode == ModeEdge {
		why, err := edgeOffer(ctx, q, st, c)
		if err != nil {
			return err
		}
		if why != nil {
			return why
		}
	}
	_, err = q.IngressSetMode(ctx, queries.IngressSetModeParams{ClusterID: c.ID, Mode: mode})
	if errors.Is(err, pgx.ErrNoRows) {
		cur, err := q.IngressGet(ctx, c.ID)
		if err == nil && cur.Mode == mode {
			return nil
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("load managed ingress: %w", err)
		}
		return clusters.ErrDeleting
	}
	if err != nil {
		return fmt.Errorf("set managed ingress mode: %w", err)
	}
	// Its routes through the edge come or go, and the CNAME target
	// moves between the nodes' addresses and the Gateway's.
	if err := ScheduleEdge(ctx, q, c.ID); err != nil {
		return err
	}
	if err := checks.Schedule(ctx, q, c.ID, checks.IngressDNS, time.Now()); err != nil {
		return err
	}
	return s.recordAndQueue(ctx, tx, c, actor, "IngressMode", mode, "cluster.managed_ingress_mode", map[string]any{"mode": mode})
}
