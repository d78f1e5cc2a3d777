package clusters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// AdminPageSize is how many clusters a page of the admins' list shows.
const AdminPageSize = 50

// ErrAlreadyDeleted: an admin asked to delete a cluster that is gone.
var ErrAlreadyDeleted = errors.New("ErrAdminClusterDeleted")

// AdminFilter narrows the admins' cluster list; empty fields do not.
type AdminFilter struct {
	// Status; empty: every cluster but the deleted ones.
	Status            string
	OwnerEmail        string
	KubernetesVersion string
	AccessMode        string
	// Search is a substring of the name or the slug, in any case.
	Search string
}

// Statuses are every status a cluster can be in, in the order the
// admins' list offers them as filters.
var Statuses = []string{
	StatusPending, StatusProvisioning, StatusReady, StatusUpdating,
	StatusFailed, StatusSuspended, StatusResuming, StatusDeleting, StatusDeleted,
}

// Validate refuses a status or an access mode no cluster has, for the
// callers that must tell a mistyped filter from an empty list (the
// admin API; the console's select offers only these).
func (f AdminFilter) Validate() error {
	errs := FieldErrors{}
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		errs["status"] = "ErrAdminClusterFilterStatus"
	}
	if f.AccessMode != "" && f.AccessMode != settings.AccessNodePort && f.AccessMode != settings.AccessLoadBalancer {
		errs["access"] = "ErrClusterAccessMode"
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// AdminPage is one page of the admins' cluster list, newest first.
type AdminPage struct {
	Clusters []queries.AdminClusterListOlderRow
	// Older and Newer are the cursors of the pages after and before this
	// one (AdminList's before and after: its last and first id); 0 when
	// there is none.
	Older, Newer int64
}

// AdminList returns the clusters of every user that match f: the page
// below the id before (0: the newest), or, when after is set, the page
// above the id after. AdminPageSize at most, newest first.
func (s *Service) AdminList(ctx context.Context, f AdminFilter, before, after int64) (AdminPage, error) {
	if after == 0 {
		return s.AdminListOlder(ctx, f, before, AdminPageSize)
	}
	// One more row than shown tells whether there is a page beyond.
	newer, err := queries.New(s.Pool).AdminClusterListNewer(ctx, queries.AdminClusterListNewerParams{
		Pattern: searchPattern(f.Search), Status: f.Status, OwnerEmail: strings.TrimSpace(f.OwnerEmail),
		KubernetesVersion: f.KubernetesVersion, AccessMode: f.AccessMode, AfterID: after, RowLimit: AdminPageSize + 1,
	})
	if err != nil {
		return AdminPage{}, fmt.Errorf("list newer clusters: %w", err)
	}
	var p AdminPage
	if len(newer) > AdminPageSize {
		newer = newer[:AdminPageSize]
		p.Newer = newer[AdminPageSize-1].ID
	}
	for _, r := range newer {
		p.Clusters = append(p.Clusters, queries.AdminClusterListOlderRow(r))
	}
	if len(newer) > 0 {
		p.Older = newer[0].ID
	}
	slices.Reverse(p.Clusters)
	return p, nil
}

// AdminListOlder returns at most limit clusters of every user that match
// f, newest first, below the id before (0: the newest): AdminList's older
// pages, of any size (the admin API's ?limit=).
func (s *Service) AdminListOlder(ctx context.Context, f AdminFilter, before int64, limit int) (AdminPage, error) {
	rows, err := queries.New(s.Pool).AdminClusterListOlder(ctx, queries.AdminClusterListOlderParams{
		Pattern: searchPattern(f.Search), Status: f.Status, OwnerEmail: strings.TrimSpace(f.OwnerEmail),
		KubernetesVersion: f.KubernetesVersion, AccessMode: f.AccessMode, BeforeID: before, RowLimit: int32(limit) + 1,
	})
	if err != nil {
		return AdminPage{}, fmt.Errorf("list clusters: %w", err)
	}
	p := AdminPage{Clusters: rows}
	if len(rows) > limit {
		p.Clusters = rows[:limit]
		p.Older = p.Clusters[limit-1].ID
	}
	if before != 0 && len(p.Clusters) > 0 {
		p.Newer = p.Clusters[0].ID
	}
	return p, nil
}

// searchPattern is the LIKE pattern of a search: "" for none.
func searchPattern(search string) string {
	if search = strings.TrimSpace(search); search != "" {
		return input.Contains(search)
	}
	return ""
}

// AdminRetry is Retry by an admin, on any user's cluster: the owner is
// told, and the audit event names the admin's action.
func (s *Service) AdminRetry(ctx context.Context, id int64, actor audit.Actor) (queries.Cluster, error) {
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
		if c, err = s.retry(ctx, tx, q, id); err != nil {
			return err
		}
		return s.adminRecord(ctx, tx, q, c, actor, "admin.cluster_retry", "AdminRetryRequested", notify.EmailClusterAdminRetried)
	})
	return c, err
}

// AdminDelete is Delete by an admin, on any user's cluster, confirmed by
// its slug (names are unique per owner only). It is "forced": a cluster
// in any state but deleted is deleted, as for its owner, and one already
// being deleted gets a fresh reconcile, which takes up the removal where
// it stopped (a cluster whose removal failed included). The owner is told.
func (s *Service) AdminDelete(ctx context.Context, id int64, confirmSlug string, actor audit.Actor) (queries.Cluster, error) {
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
		if cur.Status == StatusDeleted {
			return ErrAlreadyDeleted
		}
		if strings.TrimSpace(confirmSlug) != cur.Slug {
			return FieldErrors{"confirm": "ErrAdminClusterConfirmSlug"}
		}
		if c, err = q.ClusterRequestDelete(ctx, id); err != nil {
			return fmt.Errorf("delete cluster: %w", err)
		}
		if err := s.supersedeReconciles(ctx, tx, id); err != nil {
			return err
		}
		return s.adminRecord(ctx, tx, q, c, actor, "admin.cluster_delete", "AdminDeleteRequested", notify.EmailClusterAdminDeleted)
	})
	return c, err
}

// adminRecord writes what record does for an admin's action on c, the
// audit event naming who made it, and tells the cluster's organization
// with template (notify.TellCluster).
func (s *Service) adminRecord(ctx context.Context, tx pgx.Tx, q *queries.Queries, c queries.Cluster, actor audit.Actor, action, reason, template string) error {
	owner, err := q.UserGetByID(ctx, c.OwnerID)
	if err != nil {
		return fmt.Errorf("load owner of cluster %d: %w", c.ID, err)
	}
	if err := s.recordAs(ctx, tx, q, c, actor, action, reason, map[string]any{"owner_id": owner.ID, "owner_email": owner.Email, "slug": c.Slug}); err != nil {
		return err
	}
	_, err = notify.Notices{Box: s.Box, River: s.River}.TellCluster(ctx, tx, c, notify.ClusterAdmin, template, map[string]any{})
	return err
}

// AdminDetail is a cluster with what its admin page shows beside it.
type AdminDetail struct {
	Cluster queries.Cluster
	Owner   queries.User
	// Alerts are the names of its open metric alerts.
	Alerts []string
	// Nodes are the nodes recorded of it; Tokens its join tokens.
	Nodes  []queries.Node
	Tokens []queries.JoinTokenListForAdminRow
}

// AdminGet is any user's cluster with id, for an admin, with its owner,
// open alerts, recorded nodes and join tokens; ErrNotFound for none.
func (s *Service) AdminGet(ctx context.Context, id int64) (AdminDetail, error) {
	q := queries.New(s.Pool)
	var d AdminDetail
	var err error
	d.Cluster, err = q.ClusterGetByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return AdminDetail{}, ErrNotFound
	}
	if err != nil {
		return AdminDetail{}, fmt.Errorf("load cluster %d: %w", id, err)
	}
	if d.Owner, err = q.UserGetByID(ctx, d.Cluster.OwnerID); err != nil {
		return AdminDetail{}, fmt.Errorf("load owner of cluster %d: %w", id, err)
	}
	if d.Alerts, err = q.ClusterMetricAlertsOpen(ctx, id); err != nil {
		return AdminDetail{}, fmt.Errorf("alerts of cluster %d: %w", id, err)
	}
	if d.Nodes, err = q.NodeListByCluster(ctx, id); err != nil {
		return AdminDetail{}, fmt.Errorf("nodes of cluster %d: %w", id, err)
	}
	if d.Tokens, err = q.JoinTokenListForAdmin(ctx, id); err != nil {
		return AdminDetail{}, fmt.Errorf("join tokens of cluster %d: %w", id, err)
	}
	return d, nil
}

// AdminSortKeys are the columns the admins' cluster list sorts by
// (AdminListSorted).
var AdminSortKeys = []string{"name", "owner", "status", "version", "nodes", "created"}

// AdminListSorted is AdminList in the order of a column of AdminSortKeys
// (descending when desc), its page-th page (from 1); more says whether a
// page follows.
func (s *Service) AdminListSorted(ctx context.Context, f AdminFilter, key string, desc bool, page int) (rows []queries.AdminClusterListOlderRow, more bool, err error) {
	sorted, err := queries.New(s.Pool).AdminClusterListSorted(ctx, queries.AdminClusterListSortedParams{
		Pattern: searchPattern(f.Search), Status: f.Status, OwnerEmail: strings.TrimSpace(f.OwnerEmail),
		KubernetesVersion: f.KubernetesVersion, AccessMode: f.AccessMode, SortKey: key, Descending: desc,
		RowOffset: int32((page - 1) * AdminPageSize), RowLimit: AdminPageSize + 1,
	})
	if err != nil {
		return nil, false, fmt.Errorf("list clusters by %s: %w", key, err)
	}
	if more = len(sorted) > AdminPageSize; more {
		sorted = sorted[:AdminPageSize]
	}
	for _, r := range sorted {
		rows = append(rows, queries.AdminClusterListOlderRow(r))
	}
	return rows, more, nil
}
