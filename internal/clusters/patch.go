package clusters

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// Patch is a partial update: nil fields keep their value.
type Patch struct {
	Description       *string
	KubernetesVersion *string
	PublicAccessMode  *string
}

// Apply is Update with the fields of p set over the cluster's current
// ones, in the caller's transaction (an Edit step): the cluster is read
// again under its lock, so that two patches at once each keep what the
// other changed of the fields it left out.
func (s *Service) Apply(ctx context.Context, tx pgx.Tx, c queries.Cluster, p Patch, actor audit.Actor) (queries.Cluster, error) {
	q := queries.New(tx)
	rt, err := settings.Load(ctx, q, s.Box)
	if err != nil {
		return c, err
	}
	// Edit found the cluster for the member, and holds its lock.
	cur, err := q.ClusterLock(ctx, c.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, ErrNotFound
	}
	if err != nil {
		return c, fmt.Errorf("load cluster: %w", err)
	}
	in := Input{
		Description:       valueOr(p.Description, cur.Description),
		KubernetesVersion: valueOr(p.KubernetesVersion, cur.KubernetesVersion),
		PublicAccessMode:  valueOr(p.PublicAccessMode, cur.PublicAccessMode),
	}
	return s.update(ctx, tx, rt, cur, in, actor)
}

// valueOr is *p, or cur when the patch leaves the field out.
func valueOr(p *string, cur string) string {
	if p == nil {
		return cur
	}
	return *p
}
