package clusters

import (
	"context"
	"fmt"

	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// Overview is what the overview page shows of the organization a member
// acts in: its figures, its newest clusters and their newest events.
type Overview struct {
	Figures  queries.OverviewForMemberRow
	Clusters []queries.ClusterOverviewForMemberRow
	Events   []queries.ClusterEventRecentForMemberRow
}

// Overview reads the overview of the organization who acts in, with at
// most limit clusters and limit events. A member who may not read the
// clusters sees none, as in the cluster list. Its three reads are not one
// transaction: at READ COMMITTED a transaction would not make them one
// snapshot either, and a change between them shows on the next update.
func (s *Service) Overview(ctx context.Context, who orgs.Acting, limit int) (Overview, error) {
	var o Overview
	var err error
	roles := who.Roles(orgs.Read)
	q := queries.New(s.Pool)
	o.Figures, err = q.OverviewForMember(ctx, queries.OverviewForMemberParams{OrgID: who.OrgID, UserID: who.UserID, Roles: roles})
	if err != nil {
		return o, fmt.Errorf("overview figures: %w", err)
	}
	o.Clusters, err = q.ClusterOverviewForMember(ctx, queries.ClusterOverviewForMemberParams{OrgID: who.OrgID, UserID: who.UserID, Roles: roles, RowLimit: int32(limit)})
	if err != nil {
		return o, fmt.Errorf("overview clusters: %w", err)
	}
	o.Events, err = q.ClusterEventRecentForMember(ctx, queries.ClusterEventRecentForMemberParams{OrgID: who.OrgID, UserID: who.UserID, Roles: roles, RowLimit: int32(limit)})
	if err != nil {
		return o, fmt.Errorf("overview events: %w", err)
	}
	return o, nil
}
