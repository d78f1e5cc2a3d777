package handlers

import (
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/internal/nodes"
)

// A pageLoad is what a signed-in page reads before it knows who asks:
// queries by what its URL names, which need not wait for one another
// (database.Call). A page whose route is in preloads has its load read
// with the session's query, in one round trip (sessionStore.FindCtx); the
// page then shows what was read to whom it is for alone (the loads check
// the owner, requireAdmin the admin).
type pageLoad interface {
	calls() []database.Call
}

// newLoad makes a page's load from its request; its error (a bad ID in
// the path) is the page's.
type newLoad[L pageLoad] func(c echo.Context) (L, error)

// preloads are the pages, by route (GET), whose load the session store
// reads with the session: those a signed-in browser asks for most. Their
// handlers read it with loadPage.
func preloads() map[string]newLoad[pageLoad] {
	return map[string]newLoad[pageLoad]{
		"/clusters/:id":       anyLoad(newClusterPageLoad),
		"/clusters/:id/nodes": anyLoad(newNodesPageLoad),
		"/admin/users":        anyLoad(newAdminUsersLoad),
	}
}

func anyLoad[L pageLoad](f newLoad[L]) newLoad[pageLoad] {
	return func(c echo.Context) (pageLoad, error) { return f(c) }
}

// loadPage is the page's load, read: the one read with the session when
// its route is in preloads, else read now, in a round trip of its own.
func loadPage[L pageLoad](h *Handlers, c echo.Context, f newLoad[L]) (L, error) {
	ctx := c.Request().Context()
	if si, ok := ctx.Value(signedInKey{}).(*signedIn); ok && si.loaded {
		if l, ok := si.load.(L); ok {
			return l, si.loadErr
		}
	}
	l, err := f(c)
	if err != nil {
		return l, err
	}
	return l, database.Pipeline(ctx, h.Pool, l.calls()...)
}

// clusterPageLoad is the cluster page's: the cluster and its newest events.
type clusterPageLoad struct {
	cluster nodes.ClusterLoad
	events  clusters.EventsLoad
}

func newClusterPageLoad(c echo.Context) (*clusterPageLoad, error) {
	id, err := clusterIDParam(c)
	if err != nil {
		return nil, err
	}
	return &clusterPageLoad{cluster: nodes.ClusterLoad{ID: id}, events: clusters.EventsLoad{ClusterID: id}}, nil
}

func (l *clusterPageLoad) calls() []database.Call {
	return []database.Call{l.cluster.Read, l.events.Read}
}

// nodesPageLoad is the nodes page's: the cluster with its recorded nodes.
type nodesPageLoad struct{ nodes.PageLoad }

func newNodesPageLoad(c echo.Context) (*nodesPageLoad, error) {
	id, err := clusterIDParam(c)
	if err != nil {
		return nil, err
	}
	return &nodesPageLoad{nodes.PageLoad{ID: id}}, nil
}

func (l *nodesPageLoad) calls() []database.Call { return []database.Call{l.Read} }

// adminUsersLoad is the user list's page.
type adminUsersLoad struct{ adminusers.ListLoad }

func newAdminUsersLoad(c echo.Context) (*adminUsersLoad, error) {
	return &adminUsersLoad{adminusers.ListLoad{Search: adminUsersSearch(c), After: queryID(c, "after")}}, nil
}

func (l *adminUsersLoad) calls() []database.Call { return []database.Call{l.Read} }
