package orgs

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/queries"
)

// Errors of Delete (catalog message IDs).
var (
	// ErrPersonalDelete refuses to delete a personal organization: it
	// goes with its user's account.
	ErrPersonalDelete = errors.New("ErrOrgPersonalDelete")
	// ErrHasClusters refuses to delete an organization that still has
	// clusters (deleted ones aside); the error is a HasClustersError,
	// which counts them.
	ErrHasClusters = errors.New("ErrOrgDeleteHasClusters")
	// ErrHasPendingOrder refuses to delete an organization with an order
	// waiting for payment: cancel it first.
	ErrHasPendingOrder = errors.New("ErrOrgDeleteHasPendingOrder")
)

// HasClustersError is ErrHasClusters with the number of clusters to
// delete first.
type HasClustersError struct{ Count int64 }

func (e HasClustersError) Error() string { return ErrHasClusters.Error() }

// Is makes errors.Is(e, ErrHasClusters) hold.
func (e HasClustersError) Is(target error) bool { return target == ErrHasClusters }

// Data is what the message of e refers to.
func (e HasClustersError) Data() map[string]any { return map[string]any{"Count": e.Count} }

// Delete deletes the team organization id for the acting member, who
// must be one of its owners (DeleteOrganization, matched in SQL):
// ErrForbidden for its other members, ErrNotFound for anyone else. A
// personal organization is not deleted (ErrPersonalDelete), nor one with
// clusters that are not deleted (HasClustersError), nor one with an order
// waiting for payment (ErrHasPendingOrder). In one transaction holding
// the organization's lock (which a new cluster's key-share lock on it
// waits for): the rows left of its deleted clusters go first (as
// adminusers.Delete does for an account's organizations), then its API
// keys, then the organization with its members, invitations, webhook
// channels and subscription (ON DELETE CASCADE). One that has orders,
// which are kept for accounting and name it, is closed instead (closeOrg):
// the same goes, but its row stays for the admins' books. A session
// working in it falls back to its user's personal organization on its
// next request.
func (s *Service) Delete(ctx context.Context, id int64, actor audit.Actor) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		role, err := q.OrgLockForMember(ctx, queries.OrgLockForMemberParams{ID: id, UserID: actor.UserID})
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("lock organization %d: %w", id, err)
		}
		if !Allows(Role(role), DeleteOrganization) {
			return ErrForbidden
		}
		r, err := q.OrgDetailForMember(ctx, queries.OrgDetailForMemberParams{ID: id, UserID: actor.UserID})
		if err != nil {
			return fmt.Errorf("read organization %d: %w", id, err)
		}
		if r.Organization.PersonalOf.Valid {
			return ErrPersonalDelete
		}
		ids := []int64{id}
		active, err := q.ClusterCountActiveInOrgs(ctx, ids)
		if err != nil {
			return fmt.Errorf("count the clusters of organization %d: %w", id, err)
		}
		if active > 0 {
			return HasClustersError{Count: active}
		}
		orders, err := q.OrgOrderCount(ctx, id)
		if err != nil {
			return fmt.Errorf("count the orders of organization %d: %w", id, err)
		}
		if orders.Pending > 0 {
			return ErrHasPendingOrder
		}
		// The organization's own, by org_id: no account's clusters
		// (owner 0 is nobody).
		purged, err := q.AdminUserPurgeDeletedClusters(ctx, queries.AdminUserPurgeDeletedClustersParams{OwnerID: 0, OrgIds: ids})
		if err != nil {
			return fmt.Errorf("remove the deleted clusters of organization %d: %w", id, err)
		}
		keys, err := q.OrgAPIKeysDelete(ctx, id)
		if err != nil {
			return fmt.Errorf("delete the API keys of organization %d: %w", id, err)
		}
		details := map[string]any{"members": r.MemberCount, "api_keys_deleted": keys, "deleted_clusters_removed": purged}
		if orders.Orders > 0 {
			if err := closeOrg(ctx, q, id, actor); err != nil {
				return err
			}
			details["closed"], details["orders_kept"] = true, orders.Orders
		} else if _, err := q.OrgDelete(ctx, queries.OrgDeleteParams{ID: id, UserID: actor.UserID, Roles: allowing(DeleteOrganization)}); err != nil {
			return refused(err, fmt.Sprintf("delete organization %d", id))
		}
		details["name"] = r.Organization.Name
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "org.delete", TargetType: "organization", TargetID: fmt.Sprint(id), Details: details,
		})
	})
}

// closeOrg is Delete of team id that has orders: its row stays, closed, for
// the orders that name it; its members, invitations and webhook channels
// go, and its subscription is on the default plan with nothing to renew.
func closeOrg(ctx context.Context, q *queries.Queries, id int64, actor audit.Actor) error {
	if _, err := q.OrgClose(ctx, queries.OrgCloseParams{ID: id, UserID: actor.UserID, Roles: allowing(DeleteOrganization)}); err != nil {
		return refused(err, fmt.Sprintf("close organization %d", id))
	}
	if err := q.OrgCloseMembers(ctx, id); err != nil {
		return fmt.Errorf("close organization %d: members: %w", id, err)
	}
	if err := q.OrgCloseInvitations(ctx, id); err != nil {
		return fmt.Errorf("close organization %d: invitations: %w", id, err)
	}
	if err := q.OrgCloseWebhooks(ctx, pgInt8(id)); err != nil {
		return fmt.Errorf("close organization %d: webhook channels: %w", id, err)
	}
	if err := q.OrgCloseSubscription(ctx, id); err != nil {
		return fmt.Errorf("close organization %d: subscription: %w", id, err)
	}
	return nil
}
