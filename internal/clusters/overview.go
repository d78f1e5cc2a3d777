package clusters

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// Overview is what the overview page shows of the organization a member
// acts in: its figures, its newest clusters and their newest events.
type Overview struct {
	// Figures are the query's row without its two lists (RecentClusters
	// and RecentEvents are nil), which come decoded in Clusters and Events.
	Figures  queries.OverviewForMemberRow
	Clusters []OverviewCluster
	Events   []OverviewEvent
}

// OverviewCluster is one of the newest clusters, with the nodes the
// health job last saw in it.
type OverviewCluster struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	Status     string `json:"status"`
	Nodes      int64  `json:"nodes"`
	NodesReady int64  `json:"nodes_ready"`
}

// OverviewEvent is one of the newest events of those clusters.
type OverviewEvent struct {
	ID          int64     `json:"id"`
	ClusterID   int64     `json:"cluster_id"`
	ClusterName string    `json:"cluster_name"`
	Level       string    `json:"level"`
	Reason      string    `json:"reason"`
	Message     string    `json:"message"`
	CreatedAt   time.Time `json:"created_at"`
}

// Overview reads the overview of the organization who acts in, with at
// most limit clusters and limit events, in one statement: the figures
// and the lists are of one snapshot. A member who may not read the
// clusters sees none, as in the cluster list.
func (s *Service) Overview(ctx context.Context, who orgs.Acting, limit int) (Overview, error) {
	row, err := queries.New(s.Pool).OverviewForMember(ctx, queries.OverviewForMemberParams{
		OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read), RowLimit: int32(limit),
	})
	if err != nil {
		return Overview{}, fmt.Errorf("overview: %w", err)
	}
	o := Overview{Figures: row}
	if err := json.Unmarshal(row.RecentClusters, &o.Clusters); err != nil {
		return Overview{}, fmt.Errorf("overview clusters: %w", err)
	}
	if err := json.Unmarshal(row.RecentEvents, &o.Events); err != nil {
		return Overview{}, fmt.Errorf("overview events: %w", err)
	}
	o.Figures.RecentClusters, o.Figures.RecentEvents = nil, nil
	return o, nil
}
