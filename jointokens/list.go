package jointokens

import (
	"context"
	"fmt"

	"github.com/kubebyon/kubebyon/queries"
)

// DiagnosticsLength is how many of a cluster's newest join events show.
const DiagnosticsLength = 100

// Listed is a token with what the console shows of it.
type Listed struct {
	Token  queries.JoinToken
	Status string
	// Value is the token itself while it is active, for the join command.
	Value string
	Nodes []queries.JoinTokenNode
}

// List returns a user's cluster and its tokens, newest first.
func (s *Service) List(ctx context.Context, ownerID, clusterID int64) (queries.Cluster, []Listed, error) {
	c, err := s.cluster(ctx, ownerID, clusterID)
	if err != nil {
		return c, nil, err
	}
	q := queries.New(s.Pool)
	tokens, err := q.JoinTokenListByCluster(ctx, c.ID)
	if err != nil {
		return c, nil, fmt.Errorf("list join tokens: %w", err)
	}
	nodes, err := q.JoinTokenNodeListByCluster(ctx, c.ID)
	if err != nil {
		return c, nil, fmt.Errorf("list joined nodes: %w", err)
	}
	byToken := map[int64][]queries.JoinTokenNode{}
	for _, n := range nodes {
		byToken[n.TokenID] = append(byToken[n.TokenID], n)
	}
	now := s.now()
	out := make([]Listed, len(tokens))
	for i, t := range tokens {
		out[i] = Listed{Token: t, Status: Status(t, now), Nodes: byToken[t.ID]}
		if out[i].Status == StatusActive {
			if out[i].Value, err = s.Value(t); err != nil {
				return c, nil, err
			}
		}
	}
	return c, out, nil
}

// Nodes returns the nodes that joined with a token.
func (s *Service) Nodes(ctx context.Context, tokenID int64) ([]queries.JoinTokenNode, error) {
	nodes, err := queries.New(s.Pool).JoinTokenNodeListByToken(ctx, tokenID)
	if err != nil {
		return nil, fmt.Errorf("list joined nodes: %w", err)
	}
	return nodes, nil
}

// Diagnostics returns the newest join events of a user's cluster, newest
// first.
func (s *Service) Diagnostics(ctx context.Context, ownerID, clusterID int64) ([]queries.JoinEvent, error) {
	c, err := s.cluster(ctx, ownerID, clusterID)
	if err != nil {
		return nil, err
	}
	events, err := queries.New(s.Pool).JoinEventListByCluster(ctx, queries.JoinEventListByClusterParams{ClusterID: c.ID, RowLimit: DiagnosticsLength})
	if err != nil {
		return nil, fmt.Errorf("list join events: %w", err)
	}
	return events, nil
}
