package clusters

import (
	"context"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/queries"
)

// Patch is a partial update: nil fields keep their value.
type Patch struct {
	Description       *string
	KubernetesVersion *string
	PublicAccessMode  *string
}

// Apply is Update with the fields of p set over the cluster's current ones.
// Two patches at once may both read the same current values; the later
// one then also writes back what it read for the fields it left out.
func (s *Service) Apply(ctx context.Context, ownerID, id int64, p Patch, actor audit.Actor) (queries.Cluster, error) {
	cur, err := s.Get(ctx, ownerID, id)
	if err != nil {
		return cur, err
	}
	in := Input{
		Description:       valueOr(p.Description, cur.Description),
		KubernetesVersion: valueOr(p.KubernetesVersion, cur.KubernetesVersion),
		PublicAccessMode:  valueOr(p.PublicAccessMode, cur.PublicAccessMode),
	}
	return s.Update(ctx, ownerID, id, in, actor)
}

// valueOr is *p, or cur when the patch leaves the field out.
func valueOr(p *string, cur string) string {
	if p == nil {
		return cur
	}
	return *p
}
