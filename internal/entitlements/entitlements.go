// Package entitlements is what a user's plan allows, decided in one place
// for every path that makes something a plan limits: cluster creation
// (console and API), node joins (the join endpoint and the node quota
// webhook), managed ingress and host names. A plan whose limits fall
// below what its subscriber already uses (a downgrade, an admin's change)
// deletes nothing: new clusters, nodes and host names are refused with a
// message naming the limit and the way up (the Plan page).
package entitlements

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubebyon/kubebyon/queries"
)

// Limit names what a plan limits.
type Limit string

// Limits.
const (
	Clusters  Limit = "clusters"
	Nodes     Limit = "nodes"
	Ingress   Limit = "ingress"
	Hostnames Limit = "hostnames"
)

// ErrLimit matches every LimitError (errors.Is).
var ErrLimit = errors.New("plan limit reached")

// LimitError refuses something the user's plan does not allow. Error is
// the catalog message ID; Data fills it (the plan's name and the limit).
type LimitError struct {
	Limit Limit
	Max   int32
	Plan  string
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case Clusters:
		return "ErrLimitClusters"
	case Nodes:
		return "ErrLimitNodes"
	case Ingress:
		return "ErrLimitIngress"
	default:
		return "ErrLimitHostnames"
	}
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// Data is the message's values.
func (e *LimitError) Data() map[string]any {
	return map[string]any{"Plan": e.Plan, "Max": e.Max, "Path": "/billing"}
}

// Entitlements is what the plan in effect for an organization allows.
type Entitlements struct {
	Plan queries.Plan
}

// For reads the plan of the organization (q may be the caller's
// transaction, after it locked what it counts).
func For(ctx context.Context, q *queries.Queries, orgID int64) (Entitlements, error) {
	p, err := q.PlanForOrg(ctx, orgID)
	if err != nil {
		return Entitlements{}, fmt.Errorf("plan of organization %d: %w", orgID, err)
	}
	return Entitlements{Plan: p}, nil
}

// Backends are the control-plane backends the plan lets new clusters run
// on, the first the default: those it names, else the platform's
// default one.
func (e Entitlements) Backends(platformDefault string) []string {
	if len(e.Plan.Backends) > 0 {
		return e.Plan.Backends
	}
	return []string{platformDefault}
}

// Cluster allows one more cluster beside the live ones the user has.
func (e Entitlements) Cluster(live int64) error {
	return e.atMost(Clusters, live, e.Plan.MaxClusters)
}

// Node allows one more node in a cluster that has recorded ones.
func (e Entitlements) Node(recorded int64) error {
	return e.atMost(Nodes, recorded, e.Plan.MaxNodesPerCluster)
}

// Hostname allows one more host name in a cluster that has bound ones.
func (e Entitlements) Hostname(bound int64) error {
	return e.atMost(Hostnames, bound, e.Plan.MaxHostnamesPerCluster)
}

// Ingress allows switching managed ingress on.
func (e Entitlements) Ingress() error {
	if !e.Plan.IngressAllowed {
		return &LimitError{Limit: Ingress, Plan: e.Plan.Name}
	}
	return nil
}

func (e Entitlements) atMost(l Limit, have int64, max int32) error {
	if have >= int64(max) {
		return &LimitError{Limit: l, Max: max, Plan: e.Plan.Name}
	}
	return nil
}

// NodeLimit decides a join from the figures the join endpoint reads in its
// one query: the cluster's recorded nodes and its owner's plan limit.
func NodeLimit(recorded int64, max int32) error {
	return Entitlements{Plan: queries.Plan{MaxNodesPerCluster: max}}.Node(recorded)
}
