package metrics

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/queries"
)

// Overview is what the admins' metrics overview counts of the platform.
type Overview struct {
	// Clusters are the clusters by status, deleted ones left out.
	Clusters []queries.MetricsOverviewClustersRow
	// Nodes are the recorded nodes of live clusters: Ready and in all.
	Nodes queries.MetricsOverviewNodesRow
	// Joins are the nodes that joined with a token, per day (UTC).
	Joins []queries.MetricsOverviewJoinsRow
}

// Overview counts the clusters and nodes, and the joins since
// joinsSince.
func (s *Service) Overview(ctx context.Context, joinsSince time.Time) (Overview, error) {
	q := queries.New(s.Pool)
	var o Overview
	var err error
	if o.Clusters, err = q.MetricsOverviewClusters(ctx); err != nil {
		return Overview{}, fmt.Errorf("clusters by status: %w", err)
	}
	if o.Nodes, err = q.MetricsOverviewNodes(ctx); err != nil {
		return Overview{}, fmt.Errorf("nodes ready: %w", err)
	}
	if o.Joins, err = q.MetricsOverviewJoins(ctx, pgtype.Timestamptz{Time: joinsSince, Valid: true}); err != nil {
		return Overview{}, fmt.Errorf("joins per day: %w", err)
	}
	return o, nil
}
