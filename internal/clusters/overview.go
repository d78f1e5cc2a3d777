package clusters

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

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
// most limit clusters and limit events, in one read-only transaction (the
// figures and the lists agree). A member who may not read the clusters
// sees none, as in the cluster list.
func (s *Service) Overview(ctx context.Context, who orgs.Acting, limit int) (Overview, error) {
	var o Overview
	roles := who.Roles(orgs.Read)
	err := pgx.BeginTxFunc(ctx, s.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		q := queries.New(tx)
		var err error
		o.Figures, err = q.OverviewForMember(ctx, queries.OverviewForMemberParams{OrgID: who.OrgID, UserID: who.UserID, Roles: roles})
		if err != nil {
			return fmt.Errorf("overview figures: %w", err)
		}
		o.Clusters, err = q.ClusterOverviewForMember(ctx, queries.ClusterOverviewForMemberParams{OrgID: who.OrgID, UserID: who.UserID, Roles: roles, RowLimit: int32(limit)})
		if err != nil {
			return fmt.Errorf("overview clusters: %w", err)
		}
		o.Events, err = q.ClusterEventRecentForMember(ctx, queries.ClusterEventRecentForMemberParams{OrgID: who.OrgID, UserID: who.UserID, Roles: roles, RowLimit: int32(limit)})
		if err != nil {
			return fmt.Errorf("overview events: %w", err)
		}
		return nil
	})
	return o, err
}
