package clusters

import (
	"context"
	"fmt"

	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// PageSize is how many clusters a page of the list shows.
const PageSize = 20

// Page is one page of an organization's clusters, newest first, with the columns
// the API shows.
type Page struct {
	Clusters []queries.ClusterListForMemberRow
	// NextBefore is the cursor of the next (older) page: 0 on the last.
	NextBefore int64
}

// List returns up to limit of the clusters of the organization who acts
// in with an id below before (0: from the newest).
func (s *Service) List(ctx context.Context, who orgs.Acting, before int64, limit int) (Page, error) {
	// One row more than shown tells whether another page follows.
	rows, err := queries.New(s.Pool).ClusterListForMember(ctx, queries.ClusterListForMemberParams{
		OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read), BeforeID: before, RowLimit: int32(limit) + 1,
	})
	if err != nil {
		return Page{}, fmt.Errorf("list clusters: %w", err)
	}
	p := Page{Clusters: rows}
	if len(rows) > limit {
		p.Clusters = rows[:limit]
		p.NextBefore = p.Clusters[limit-1].ID
	}
	return p, nil
}

// Summaries is one page of an organization's clusters as the cluster list and the
// dashboard show them, newest first.
type Summaries struct {
	Clusters []queries.ClusterListSummaryForMemberRow
	// NextBefore is the cursor of the next (older) page: 0 on the last.
	NextBefore int64
}

// ListSummaries is List with only the columns the pages show.
func (s *Service) ListSummaries(ctx context.Context, who orgs.Acting, before int64, limit int) (Summaries, error) {
	// One row more than shown tells whether another page follows.
	rows, err := queries.New(s.Pool).ClusterListSummaryForMember(ctx, queries.ClusterListSummaryForMemberParams{
		OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read), BeforeID: before, RowLimit: int32(limit) + 1,
	})
	if err != nil {
		return Summaries{}, fmt.Errorf("list clusters: %w", err)
	}
	p := Summaries{Clusters: rows}
	if len(rows) > limit {
		p.Clusters = rows[:limit]
		p.NextBefore = p.Clusters[limit-1].ID
	}
	return p, nil
}

// NodeNames are the names of the nodes that joined the organization's
// cluster id (none for another's).
func (s *Service) NodeNames(ctx context.Context, who orgs.Acting, id int64) ([]string, error) {
	names, err := queries.New(s.Pool).NodeNamesOfOwnedCluster(ctx, queries.NodeNamesOfOwnedClusterParams{ClusterID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read)})
	if err != nil {
		return nil, fmt.Errorf("list nodes of cluster %d: %w", id, err)
	}
	return names, nil
}

// SortKeys are the columns the cluster list sorts by (ListSummariesSorted).
var SortKeys = []string{"name", "status", "version", "created"}

// ListSummariesSorted is ListSummaries in the order of a column of
// SortKeys (descending when desc), the page-th page (from 1) of limit
// clusters; more says whether a page follows.
func (s *Service) ListSummariesSorted(ctx context.Context, who orgs.Acting, key string, desc bool, page, limit int) (rows []queries.ClusterListSummaryForMemberRow, more bool, err error) {
	sorted, err := queries.New(s.Pool).ClusterListSummaryForMemberSorted(ctx, queries.ClusterListSummaryForMemberSortedParams{
		OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read), SortKey: key, Descending: desc,
		RowOffset: int32((page - 1) * limit), RowLimit: int32(limit) + 1,
	})
	if err != nil {
		return nil, false, fmt.Errorf("list clusters by %s: %w", key, err)
	}
	if more = len(sorted) > limit; more {
		sorted = sorted[:limit]
	}
	for _, r := range sorted {
		rows = append(rows, queries.ClusterListSummaryForMemberRow(r))
	}
	return rows, more, nil
}
