package clusters

import (
	"context"
	"fmt"

	"github.com/kubebyon/kubebyon/queries"
)

// PageSize is how many clusters a page of the list shows.
const PageSize = 20

// Page is one page of a user's clusters, newest first, with the columns
// the API shows.
type Page struct {
	Clusters []queries.ClusterListByOwnerRow
	// NextBefore is the cursor of the next (older) page: 0 on the last.
	NextBefore int64
}

// List returns up to limit of a user's clusters with an id below before
// (0: from the newest).
func (s *Service) List(ctx context.Context, ownerID, before int64, limit int) (Page, error) {
	// One row more than shown tells whether another page follows.
	rows, err := queries.New(s.Pool).ClusterListByOwner(ctx, queries.ClusterListByOwnerParams{
		OwnerID: ownerID, BeforeID: before, RowLimit: int32(limit) + 1,
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

// Summaries is one page of a user's clusters as the cluster list and the
// dashboard show them, newest first.
type Summaries struct {
	Clusters []queries.ClusterListSummaryByOwnerRow
	// NextBefore is the cursor of the next (older) page: 0 on the last.
	NextBefore int64
}

// ListSummaries is List with only the columns the pages show.
func (s *Service) ListSummaries(ctx context.Context, ownerID, before int64, limit int) (Summaries, error) {
	// One row more than shown tells whether another page follows.
	rows, err := queries.New(s.Pool).ClusterListSummaryByOwner(ctx, queries.ClusterListSummaryByOwnerParams{
		OwnerID: ownerID, BeforeID: before, RowLimit: int32(limit) + 1,
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

// Dashboard is a user's newest clusters, at most limit, with how many
// clusters the user has in all (deleted ones aside), in one query.
func (s *Service) Dashboard(ctx context.Context, ownerID int64, limit int) ([]queries.ClusterListSummaryByOwnerRow, int64, error) {
	rows, err := queries.New(s.Pool).ClusterDashboardByOwner(ctx, queries.ClusterDashboardByOwnerParams{OwnerID: ownerID, RowLimit: int32(limit)})
	if err != nil {
		return nil, 0, fmt.Errorf("list clusters for the dashboard: %w", err)
	}
	out := make([]queries.ClusterListSummaryByOwnerRow, len(rows))
	var total int64
	for i, r := range rows {
		out[i] = queries.ClusterListSummaryByOwnerRow{
			ID: r.ID, Name: r.Name, Status: r.Status, KubernetesVersion: r.KubernetesVersion,
			PublicAccessMode: r.PublicAccessMode, Endpoint: r.Endpoint, CreatedAt: r.CreatedAt,
		}
		total = r.Total
	}
	return out, total, nil
}

// NodeNames are the names of the nodes that joined the owner's cluster
// id (none for another owner's).
func (s *Service) NodeNames(ctx context.Context, ownerID, id int64) ([]string, error) {
	names, err := queries.New(s.Pool).NodeNamesOfOwnedCluster(ctx, queries.NodeNamesOfOwnedClusterParams{ClusterID: id, OwnerID: ownerID})
	if err != nil {
		return nil, fmt.Errorf("list nodes of cluster %d: %w", id, err)
	}
	return names, nil
}
