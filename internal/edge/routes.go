package edge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/pgwatch"
	"github.com/kubebyon/kubebyon/queries"
)

// RoutesChannel is the PostgreSQL notification channel on which the
// database says that the route agents' routes changed (migration 033's
// triggers).
const RoutesChannel = "kubebyon_routes"

// DesiredRoutes are the routes of every cluster whose managed ingress goes
// through the edge (queries.EdgeRoutesDesired), under their version (a
// hash of them): what GET /api/v1/edge/routes serves the route agents.
func DesiredRoutes(ctx context.Context, q *queries.Queries) (edgewire.TenantRoutes, error) {
	rows, err := q.EdgeRoutesDesired(ctx)
	if err != nil {
		return edgewire.TenantRoutes{}, fmt.Errorf("tenant routes: %w", err)
	}
	routes := make([]edgewire.TenantRoute, len(rows))
	for i, r := range rows {
		routes[i] = edgewire.TenantRoute{ClusterID: r.ClusterID, Node: r.Name, Dst: r.PodCidr.String(), Via: r.InternalIp}
	}
	raw, err := json.Marshal(routes)
	if err != nil {
		return edgewire.TenantRoutes{}, fmt.Errorf("encode tenant routes: %w", err)
	}
	sum := sha256.Sum256(raw)
	return edgewire.TenantRoutes{Version: hex.EncodeToString(sum[:8]), Routes: routes}, nil
}

// RoutesWatcher keeps the route agents' routes for their long polls.
type RoutesWatcher = pgwatch.Watcher[edgewire.TenantRoutes]

// NewRoutesWatcher returns a watcher that reads the routes from pool.
func NewRoutesWatcher(pool *pgxpool.Pool, logger *slog.Logger) *RoutesWatcher {
	desired := func(ctx context.Context) (edgewire.TenantRoutes, error) { return DesiredRoutes(ctx, queries.New(pool)) }
	return pgwatch.New(pool, logger, RoutesChannel, desired, func(r edgewire.TenantRoutes) string { return r.Version })
}

// RecordRoutes stores a route agent's report, made with token, from
// address.
func (s *Service) RecordRoutes(ctx context.Context, token queries.EdgeToken, address string, r edgewire.RouteReport) (queries.RouteAgent, error) {
	r.Node = strings.TrimSpace(r.Node)
	errs := input.Errors{}
	switch {
	case r.Node == "":
		errs["node"] = "ErrEdgeInstanceNameRequired"
	case utf8.RuneCountInString(r.Node) > MaxNameLength:
		errs["node"] = "ErrEdgeInstanceNameTooLong"
	}
	if len(r.Version) > edgewire.MaxReportText || len(r.Error) > edgewire.MaxReportText {
		errs["error"] = "ErrEdgeReportTooLong"
	}
	if r.InPlace < 0 || r.Added < 0 || r.Replaced < 0 || r.Removed < 0 || len(r.Failed) > edgewire.MaxReportedFailures {
		errs["failed"] = "ErrEdgeReportRoutes"
	}
	for dst, why := range r.Failed {
		if len(dst) > edgewire.MaxReportDst || len(why) > edgewire.MaxReportText {
			errs["failed"] = "ErrEdgeReportTooLong"
		}
	}
	if len(errs) > 0 {
		return queries.RouteAgent{}, errs
	}
	if r.Failed == nil {
		r.Failed = map[string]string{}
	}
	failed, err := json.Marshal(r.Failed)
	if err != nil {
		return queries.RouteAgent{}, fmt.Errorf("encode failed routes: %w", err)
	}
	row, err := queries.New(s.Pool).RouteAgentRecord(ctx, queries.RouteAgentRecordParams{
		TokenID: token.ID, Node: r.Node, Address: address, AppliedVersion: r.Version,
		InPlace: int32(r.InPlace), Added: int32(r.Added), Replaced: int32(r.Replaced), Removed: int32(r.Removed),
		Failed: failed, LastError: r.Error,
	})
	if err != nil {
		return queries.RouteAgent{}, fmt.Errorf("record the report of route agent %q: %w", r.Node, err)
	}
	return row, nil
}

// RouteAgentsFresh is how recent a route agent's report must be for the
// console to count it.
const RouteAgentsFresh = 2 * time.Minute

// Route agents' states with a cluster's routes (AgentRoutes.State).
const (
	RoutesInPlace  = "in_place"
	RoutesUpdating = "updating"
	RoutesFailed   = "failed"
)

// ClusterRoutes is how the route agents stand with one cluster's routes.
type ClusterRoutes struct {
	// Routes counts the cluster's routes.
	Routes int
	// Agents are the route agents that reported within RouteAgentsFresh.
	Agents []AgentRoutes
}

// AgentRoutes is one route agent's state with a cluster's routes: in
// place (it applied the current routes, none of the cluster's failed),
// updating (it applied older ones), or failed (Failed says which of the
// cluster's routes and why; Error what stopped its whole run).
type AgentRoutes struct {
	Node   string
	State  string
	Failed []string
	Error  string
	SeenAt time.Time
}

// InPlace counts the agents that have every route of the cluster.
func (c ClusterRoutes) InPlace() int {
	n := 0
	for _, a := range c.Agents {
		if a.State == RoutesInPlace {
			n++
		}
	}
	return n
}

// ClusterRoutesOf is how the route agents that reported recently stand
// with the routes of cluster id, given the current routes.
func (s *Service) ClusterRoutesOf(ctx context.Context, current edgewire.TenantRoutes, id int64) (ClusterRoutes, error) {
	agents, err := s.RouteAgents(ctx, RouteAgentsFresh)
	if err != nil {
		return ClusterRoutes{}, err
	}
	var mine []edgewire.TenantRoute
	for _, r := range current.Routes {
		if r.ClusterID == id {
			mine = append(mine, r)
		}
	}
	out := ClusterRoutes{Routes: len(mine)}
	for _, a := range agents {
		failed := a.FailedRoutes
		ar := AgentRoutes{Node: a.Node, State: RoutesInPlace, Error: a.LastError, SeenAt: a.LastSeenAt.Time}
		for _, r := range mine {
			if why, ok := failed[r.Dst]; ok {
				ar.Failed = append(ar.Failed, r.Dst+" via "+r.Via+": "+why)
			}
		}
		switch {
		case len(ar.Failed) > 0 || a.LastError != "":
			ar.State = RoutesFailed
		case a.AppliedVersion != current.Version:
			ar.State = RoutesUpdating
		}
		out.Agents = append(out.Agents, ar)
	}
	return out, nil
}

// RouteAgent is a route agent's last report, with the routes it could not
// apply (by destination: why).
type RouteAgent struct {
	queries.RouteAgentListRow
	FailedRoutes map[string]string
}

// RouteAgents are the route agents that reported within since, by node.
func (s *Service) RouteAgents(ctx context.Context, since time.Duration) ([]RouteAgent, error) {
	rows, err := queries.New(s.Pool).RouteAgentList(ctx, pgtype.Timestamptz{Time: time.Now().Add(-since), Valid: true})
	if err != nil {
		return nil, fmt.Errorf("list route agents: %w", err)
	}
	out := make([]RouteAgent, len(rows))
	for i, r := range rows {
		var failed map[string]string
		if err := json.Unmarshal(r.Failed, &failed); err != nil {
			return nil, fmt.Errorf("decode the failed routes of route agent %q: %w", r.Node, err)
		}
		out[i] = RouteAgent{RouteAgentListRow: r, FailedRoutes: failed}
	}
	return out, nil
}
