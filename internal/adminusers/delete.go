package adminusers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/queries"
)

// Errors of Delete whose messages admins see (catalog message IDs).
var (
	ErrSelfDelete    = errors.New("ErrAdminSelfDelete")
	ErrEmailMismatch = errors.New("ErrAdminDeleteEmailMismatch")
	ErrHasClusters   = errors.New("ErrAdminDeleteHasClusters")
	ErrHasOrders     = errors.New("ErrAdminDeleteHasOrders")
	// ErrSoleOwner: the account is the only owner of a team that has
	// other members, which would be left without one.
	ErrSoleOwner = errors.New("ErrAdminDeleteSoleOwner")
)

// Delete removes the account userID for good on behalf of the admin
// actor.UserID, who confirms it by typing the account's email and their
// own password. An account with clusters (deleted ones aside) or with
// orders (kept for accounting) is refused. Everything else of the account
// (sessions, API keys, identities, notifications, subscription) goes with
// its row, by the foreign keys' ON DELETE CASCADE; the rows left of its
// deleted clusters, which would block it, are removed first; audit events
// keep their rows with the actor emptied. All of it is one transaction.
func (s *Service) Delete(ctx context.Context, userID int64, email, password string, actor audit.Actor) error {
	adminID := actor.UserID
	if userID == adminID {
		return ErrSelfDelete
	}
	q := queries.New(s.Pool)
	target, err := q.UserGetByID(ctx, userID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("get user %d: %w", userID, err)
	}
	if !strings.EqualFold(strings.TrimSpace(email), target.Email) {
		return ErrEmailMismatch
	}
	if err := adminauth.ConfirmPassword(ctx, s.Pool, adminID, password, s.now()); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		target, err := lockAdminAndUser(ctx, q, adminID, userID)
		if err != nil {
			return err
		}
		// The last active admin is never deleted: the acting admin, checked
		// active above under the lock, is not the target and remains.
		// A cluster's insert takes a key-share lock on its owner's row,
		// which the lock above excludes: none can be created meanwhile.
		n, err := q.ClusterCountActiveMadeBy(ctx, userID)
		if err != nil {
			return fmt.Errorf("count clusters of user %d: %w", userID, err)
		}
		going, err := q.AdminUserOrgsGoing(ctx, userID)
		if err != nil {
			return fmt.Errorf("organizations of user %d: %w", userID, err)
		}
		inOrgs, err := q.ClusterCountActiveInOrgs(ctx, going)
		if err != nil {
			return fmt.Errorf("count clusters of the organizations of user %d: %w", userID, err)
		}
		if n+inOrgs > 0 {
			return ErrHasClusters
		}
		if sole, err := q.AdminUserSoleOwnerships(ctx, userID); err != nil {
			return fmt.Errorf("ownerships of user %d: %w", userID, err)
		} else if sole > 0 {
			return ErrSoleOwner
		}
		orders, err := q.AdminUserCountOrders(ctx, userID)
		if err != nil {
			return fmt.Errorf("count orders of user %d: %w", userID, err)
		}
		if orders > 0 {
			return ErrHasOrders
		}
		purged, err := q.AdminUserPurgeDeletedClusters(ctx, queries.AdminUserPurgeDeletedClustersParams{OwnerID: userID, OrgIds: going})
		if err != nil {
			return fmt.Errorf("remove deleted clusters of user %d: %w", userID, err)
		}
		if err := q.AdminUserDeleteOrgs(ctx, going); err != nil {
			return fmt.Errorf("delete the organizations of user %d: %w", userID, err)
		}
		if _, err := q.AdminUserDelete(ctx, userID); err != nil {
			return fmt.Errorf("delete user %d: %w", userID, err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "admin.user_delete", TargetType: "user", TargetID: strconv.FormatInt(userID, 10),
			Details: map[string]any{"email": target.Email, "deleted_clusters_removed": purged},
		})
	})
}
