package clusters

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/queries"
)

// Errors of suspending and resuming (catalog message IDs).
var (
	// ErrSuspended refuses an owner's change to a suspended cluster;
	// deleting it is still allowed.
	ErrSuspended = errors.New("ErrClusterSuspended")
	// ErrNotSuspendable: only a ready cluster can be suspended.
	ErrNotSuspendable = errors.New("ErrAdminClusterNotSuspendable")
	// ErrNotSuspended: only a suspended cluster can be resumed.
	ErrNotSuspended = errors.New("ErrAdminClusterNotSuspended")
)

// Suspended reports whether an admin suspended the cluster and it is not
// running again yet (suspended, or resuming): its owner cannot change it
// then, and no node joins it.
func Suspended(c queries.Cluster) bool {
	return c.Status == StatusSuspended || c.Status == StatusResuming
}

// AdminSuspend suspends a ready cluster, confirmed by its slug: from the
// commit on, joins are refused and its owner cannot change it (deleting it
// is still allowed); the reconcile job scales its control plane to 0, and
// the periodic checks leave it alone (they skip clusters that are not
// ready). The owner is told. A cluster that is not ready (suspended
// already, by a request a moment before, included) gets
// ErrNotSuspendable.
func (s *Service) AdminSuspend(ctx context.Context, id int64, confirmSlug string, actor audit.Actor) (queries.Cluster, error) {
	var c queries.Cluster
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := adminauth.LockActiveAdmin(ctx, q, actor.UserID); err != nil {
			return err
		}
		cur, err := q.ClusterLock(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("load cluster: %w", err)
		}
		if cur.Status != StatusReady || cur.DeleteRequestedAt.Valid {
			return ErrNotSuspendable
		}
		if strings.TrimSpace(confirmSlug) != cur.Slug {
			return FieldErrors{"suspend_confirm": "ErrAdminClusterConfirmSlug"}
		}
		c, err = q.ClusterSuspend(ctx, queries.ClusterSuspendParams{ID: id, SuspendedBy: pgtype.Int8{Int64: actor.UserID, Valid: true}})
		if err != nil {
			return fmt.Errorf("suspend cluster: %w", err)
		}
		return s.adminRecord(ctx, tx, q, c, actor, "admin.cluster_suspend", "AdminSuspended", notify.EmailClusterAdminSuspended)
	})
	return c, err
}

// AdminResume resumes a suspended cluster: the reconcile job scales its
// control plane back to the replicas it had and marks it ready once it
// answers, which starts its periodic checks again. The owner is told. A
// cluster that is not suspended (resumed already included) gets
// ErrNotSuspended.
func (s *Service) AdminResume(ctx context.Context, id int64, actor audit.Actor) (queries.Cluster, error) {
	var c queries.Cluster
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := adminauth.LockActiveAdmin(ctx, q, actor.UserID); err != nil {
			return err
		}
		if _, err := q.ClusterLock(ctx, id); errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return fmt.Errorf("load cluster: %w", err)
		}
		var err error
		c, err = q.ClusterResume(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotSuspended
		}
		if err != nil {
			return fmt.Errorf("resume cluster: %w", err)
		}
		return s.adminRecord(ctx, tx, q, c, actor, "admin.cluster_resume", "AdminResumed", notify.EmailClusterAdminResumed)
	})
	return c, err
}
