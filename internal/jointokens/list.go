package jointokens

import (
	"context"
	"fmt"

	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// DiagnosticsPerToken is how many of a token's newest join events show
// under it.
const DiagnosticsPerToken = 20

// Listed is a token with what the console shows of it.
type Listed struct {
	Token  queries.JoinToken
	Status string
	// Value is the token itself while it is active, for the join command.
	Value string
	Nodes []queries.JoinTokenNode
	// Events are the newest join events reported with it, newest first.
	Events []queries.JoinEvent
}

// List returns a user's cluster and its tokens, newest first.
func (s *Service) List(ctx context.Context, who orgs.Acting, clusterID int64) (queries.Cluster, []Listed, error) {
	c, err := s.cluster(ctx, who, orgs.Read, clusterID)
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
	events, err := q.JoinEventListByCluster(ctx, queries.JoinEventListByClusterParams{ClusterID: c.ID, PerToken: DiagnosticsPerToken})
	if err != nil {
		return c, nil, fmt.Errorf("list join events: %w", err)
	}
	nodesOf := map[int64][]queries.JoinTokenNode{}
	for _, n := range nodes {
		nodesOf[n.TokenID] = append(nodesOf[n.TokenID], n)
	}
	eventsOf := map[int64][]queries.JoinEvent{}
	for _, e := range events {
		eventsOf[e.TokenID] = append(eventsOf[e.TokenID], e)
	}
	out := make([]Listed, len(tokens))
	for i, t := range tokens {
		if out[i], err = s.listed(t, nodesOf[t.ID], eventsOf[t.ID]); err != nil {
			return c, nil, err
		}
	}
	return c, out, nil
}

// Page is up to n of the tokens of a user's cluster, newest first, below
// the token before (0: from the newest), as the API lists them: each
// with the machines that joined with it, without the join events.
func (s *Service) Page(ctx context.Context, who orgs.Acting, clusterID, before int64, n int32) ([]Listed, error) {
	c, err := s.cluster(ctx, who, orgs.Read, clusterID)
	if err != nil {
		return nil, err
	}
	q := queries.New(s.Pool)
	tokens, err := q.JoinTokenPageByCluster(ctx, queries.JoinTokenPageByClusterParams{ClusterID: c.ID, BeforeID: before, RowLimit: n})
	if err != nil {
		return nil, fmt.Errorf("list join tokens: %w", err)
	}
	ids := make([]int64, len(tokens))
	for i, t := range tokens {
		ids[i] = t.ID
	}
	nodes, err := q.JoinTokenNodeListByTokens(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("list joined nodes: %w", err)
	}
	nodesOf := map[int64][]queries.JoinTokenNode{}
	for _, n := range nodes {
		nodesOf[n.TokenID] = append(nodesOf[n.TokenID], n)
	}
	out := make([]Listed, len(tokens))
	for i, t := range tokens {
		if out[i], err = s.listed(t, nodesOf[t.ID], nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// One returns a token of one of the organization's clusters as List
// does, for its live view (p is orgs.Read) and its revocation's page
// (orgs.Operate: who may not revoke it is refused the page,
// orgs.ErrForbidden).
func (s *Service) One(ctx context.Context, who orgs.Acting, p orgs.Permission, clusterID, id int64) (Listed, error) {
	row, err := s.get(ctx, who, p, clusterID, id)
	if err != nil {
		return Listed{}, err
	}
	q := queries.New(s.Pool)
	nodes, err := q.JoinTokenNodeListByToken(ctx, id)
	if err != nil {
		return Listed{}, fmt.Errorf("list joined nodes: %w", err)
	}
	events, err := q.JoinEventListByToken(ctx, queries.JoinEventListByTokenParams{TokenID: id, RowLimit: DiagnosticsPerToken})
	if err != nil {
		return Listed{}, fmt.Errorf("list join events: %w", err)
	}
	return s.listed(row.JoinToken, nodes, events)
}

func (s *Service) listed(t queries.JoinToken, nodes []queries.JoinTokenNode, events []queries.JoinEvent) (Listed, error) {
	l := Listed{Token: t, Status: Status(t, s.now()), Nodes: nodes, Events: events}
	if l.Status == StatusActive {
		v, err := s.Value(t)
		if err != nil {
			return Listed{}, err
		}
		l.Value = v
	}
	return l, nil
}
