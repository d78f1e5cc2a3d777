package clusters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// ErrPreconditionFailed refuses a conditional change (Edit) of a cluster
// that changed since its entity tag was read.
var ErrPreconditionFailed = errors.New("ErrClusterPreconditionFailed")

// etag is the strong entity tag of what the changes of a cluster change
// (the API's PATCH and the console's edits): its settings, its generation
// (which every change of its version or access mode counts, so that a
// change and its undoing still make another tag) and its managed
// ingress's switch and mode. What the platform's jobs write (status,
// endpoint, the ingress's progress) is not in it, so that a tag read
// while a cluster is provisioning still holds.
func etag(r queries.ClusterGetTaggedRow) string {
	c := r.Cluster
	stale := int32(-1)
	if c.StaleNodeCleanupHours.Valid {
		stale = c.StaleNodeCleanupHours.Int32
	}
	// Each text ends with a NUL, which no field can hold: no two states
	// give the same bytes.
	sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%s\x00%s\x00%s\x00%d\x00%t\x00%s\x00",
		c.Generation, c.Description, c.KubernetesVersion, c.PublicAccessMode, stale, r.IngressEnabled, r.IngressMode))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// Tagged is an organization's cluster, read with its entity tag (as Get:
// another's, or a deleted one, is ErrNotFound).
func (s *Service) Tagged(ctx context.Context, who orgs.Acting, id int64) (queries.Cluster, string, error) {
	return tagged(ctx, queries.New(s.Pool), who, orgs.Read, id)
}

func tagged(ctx context.Context, q *queries.Queries, who orgs.Acting, p orgs.Permission, id int64) (queries.Cluster, string, error) {
	r, err := q.ClusterGetTagged(ctx, queries.ClusterGetTaggedParams{ID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(p)})
	if errors.Is(err, pgx.ErrNoRows) {
		return queries.Cluster{}, "", ErrNotFound
	}
	if err != nil {
		return queries.Cluster{}, "", fmt.Errorf("load cluster %d: %w", id, err)
	}
	return r.Cluster, etag(r), nil
}

// Step is one part of a change of cluster c, run in the change's
// transaction tx: the services' *Tx functions (Apply, the managed
// ingress's, the stale-node clean-up's).
type Step func(ctx context.Context, tx pgx.Tx, c queries.Cluster) error

// Edit makes one change of the organization's cluster id, for a member who may operate it, its steps in one
// transaction that holds the cluster's lock (ClusterLockForChange) from
// before its entity tag is read until the change commits: when match
// refuses the tag, it is ErrPreconditionFailed and nothing changes (nil
// match: any tag). A cluster being deleted is ErrDeleting, a suspended
// one ErrSuspended. The console's edits take the same lock, or the row
// lock of an update, so that none slips between the check and the
// change. It returns the cluster and its tag as the change left them.
//
// Steps that write the managed ingress's row come before Apply: Apply
// locks the cluster row FOR UPDATE, which holds up the jobs that write
// that row and then a cluster event; taking the ingress row after it
// could deadlock with them.
func (s *Service) Edit(ctx context.Context, who orgs.Acting, id int64, match func(etag string) bool, steps ...Step) (queries.Cluster, string, error) {
	var (
		c   queries.Cluster
		tag string
	)
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if _, err := q.ClusterLockForChange(ctx, queries.ClusterLockForChangeParams{ID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Operate)}); errors.Is(err, pgx.ErrNoRows) {
			return Refusal(ctx, q, who, orgs.Operate, id)
		} else if err != nil {
			return fmt.Errorf("lock cluster %d: %w", id, err)
		}
		cur, curTag, err := tagged(ctx, q, who, orgs.Operate, id)
		if err != nil {
			return err
		}
		if match != nil && !match(curTag) {
			return ErrPreconditionFailed
		}
		if cur.DeleteRequestedAt.Valid {
			return ErrDeleting
		}
		if Suspended(cur) {
			return ErrSuspended
		}
		for _, step := range steps {
			if err := step(ctx, tx, cur); err != nil {
				return err
			}
		}
		c, tag, err = tagged(ctx, q, who, orgs.Operate, id)
		return err
	})
	return c, tag, err
}
