package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// statusStopPolling is the status that tells htmx to stop polling.
const statusStopPolling = 286

func (h *Handlers) showClustersPage(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	key, desc, pg := listSort(c, clusters.SortKeys)
	l := views.ClusterList{Sort: views.Sort{Path: "/clusters", Key: key, Desc: desc}}
	var rows []queries.ClusterListSummaryForMemberRow
	if key == "" {
		// The newest first, by cursor: the dashboard's speed (issue 36).
		before := queryID(c, "before")
		page, err := h.Clusters.ListSummaries(c.Request().Context(), who, before, clusters.PageSize)
		if err != nil {
			return err
		}
		rows = page.Clusters
		if page.NextBefore != 0 {
			l.NextURL = fmt.Sprintf("/clusters?before=%d", page.NextBefore)
		}
		if before != 0 {
			l.FirstURL = "/clusters"
		}
	} else {
		var more bool
		if rows, more, err = h.Clusters.ListSummariesSorted(c.Request().Context(), who, key, desc, pg, clusters.PageSize); err != nil {
			return err
		}
		if more {
			l.NextURL = l.Sort.URL(key, desc, pg+1)
		}
		if pg > 1 {
			l.FirstURL = l.Sort.URL(key, desc, 1)
		}
	}
	for _, cl := range rows {
		l.Clusters = append(l.Clusters, clusterSummaryView(cl))
	}
	if err := h.showRetries(c.Request().Context(), who, l.Clusters); err != nil {
		return err
	}
	h.viewAsAPICall(c, "listClusters", nil)
	return render(c, http.StatusOK, views.ClustersPage(l))
}

// overviewEvents is how many of its latest events a cluster's overview
// shows; its Events tab shows them all.
const overviewEvents = 5

func (h *Handlers) showClusterPage(c echo.Context) error {
	d, fresh, err := h.clusterDetail(c, overviewEvents)
	if err != nil {
		return err
	}
	if d.Cluster.CanDownload && d.Cluster.CanChange && fresh.NodeCount == 0 {
		if d.FirstNode, err = h.firstNode(c, d.Cluster.ID); err != nil {
			return err
		}
	}
	h.viewAsAPICall(c, "getCluster", nil, strconv.FormatInt(d.Cluster.ID, 10))
	return render(c, http.StatusOK, views.ClusterDetailPage(d))
}

// showClusterActivityPage is the cluster's Events tab: its events, live
// while it is worked on.
func (h *Handlers) showClusterActivityPage(c echo.Context) error {
	d, _, err := h.clusterDetail(c, clusters.TimelineLength)
	if err != nil {
		return err
	}
	d.Timeline = true
	h.viewAsAPICall(c, "listClusterEvents", nil, strconv.FormatInt(d.Cluster.ID, 10))
	return render(c, http.StatusOK, views.ClusterActivityPage(d))
}

// clusterDetail is the member's cluster named in the path with its latest
// events (at most events of them) and what its health check says, as its
// overview and its Events tab show them.
func (h *Handlers) clusterDetail(c echo.Context, events int) (views.ClusterDetail, nodes.ClusterPage, error) {
	who, err := h.acting(c)
	if err != nil {
		return views.ClusterDetail{}, nodes.ClusterPage{}, err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return views.ClusterDetail{}, nodes.ClusterPage{}, err
	}
	ctx := c.Request().Context()
	cl, fresh, err := h.Nodes.ClusterPage(ctx, who, id, events)
	if errors.Is(err, clusters.ErrNotFound) {
		return views.ClusterDetail{}, fresh, h.clusterNotFound(c, who, id)
	}
	if err != nil {
		return views.ClusterDetail{}, fresh, err
	}
	d := views.ClusterDetail{Cluster: clusterView(cl), Events: clusterEventViews(fresh.Events), Live: !clusters.Settled(cl) || watchIngress(cl, fresh.IngressStatus)}
	if err := h.planEndpoint(ctx, &d.Cluster, cl); err != nil {
		return views.ClusterDetail{}, fresh, err
	}
	if d.Reasons, err = h.provisionReasons(c, who, cl); err != nil {
		return views.ClusterDetail{}, fresh, err
	}
	retrying, err := h.showRetry(ctx, who, &d.Cluster, cl)
	if err != nil {
		return views.ClusterDetail{}, fresh, err
	}
	d.Live = d.Live || retrying
	if cl.Status == clusters.StatusReady {
		d.UnreachableSince, d.UnreachableError = fresh.UnreachableSince, fresh.LastError
	}
	return d, fresh, nil
}

// showClusterUpdates is the live detail page's fragment: the events after
// ?after= and the cluster's state; 286 once the cluster is settled.
func (h *Handlers) showClusterUpdates(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	m, err := h.clusterUpdates(c, who, id, queryID(c, "after"))
	if err != nil {
		return err
	}
	status := http.StatusOK
	if m.Done {
		status = statusStopPolling
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return render(c, status, views.ClusterUpdatesFragment(m))
}

// clusterUpdates is what the live page of the member's cluster id has not
// seen after event after, for its poller and its stream alike; not found
// (404) for a cluster the member may not read.
func (h *Handlers) clusterUpdates(c echo.Context, who orgs.Acting, id, after int64) (views.ClusterUpdates, error) {
	ctx := c.Request().Context()
	up, err := h.Clusters.UpdatesAfter(ctx, who, id, after)
	if errors.Is(err, clusters.ErrNotFound) {
		return views.ClusterUpdates{}, echo.ErrNotFound
	}
	if err != nil {
		return views.ClusterUpdates{}, err
	}
	if up.Done && up.Cluster.Status == clusters.StatusReady {
		// Its managed ingress may still be at work.
		status, err := h.Ingress.Status(ctx, up.Cluster.ID)
		if err != nil {
			return views.ClusterUpdates{}, err
		}
		up.Done = !watchIngress(up.Cluster, status)
	}
	m := views.ClusterUpdates{Cluster: clusterView(up.Cluster), Events: clusterEventViews(up.Events), After: after, Done: up.Done, Timeline: c.QueryParam("only") == "events"}
	if m.Reasons, err = h.provisionReasons(c, who, up.Cluster); err != nil {
		return m, err
	}
	if err := h.planEndpoint(ctx, &m.Cluster, up.Cluster); err != nil {
		return m, err
	}
	retrying, err := h.showRetry(ctx, who, &m.Cluster, up.Cluster)
	if err != nil {
		return m, err
	}
	// A failed cluster that River retries is watched for the retry.
	m.Done = m.Done && !retrying
	if n := len(up.Events); n > 0 {
		m.After = up.Events[n-1].ID
	}
	return m, nil
}

// watchIngress reports whether the cluster page keeps watching a settled
// cluster for its managed ingress: while a job works on it, which it does
// only for a ready cluster.
func watchIngress(cl queries.Cluster, ingressStatus string) bool {
	return cl.Status == clusters.StatusReady && ingress.Busy(ingressStatus)
}

// ctxAsksChange marks a request for the page of a change (asksChange).
const ctxAsksChange = "asksChange"

// asksChange is the middleware of a page that asks before a change of a
// cluster (its form, or a confirmation): reading it asks of the member
// what the change does, so that a viewer is refused the page (403) as
// they are the change, rather than shown a form that cannot work.
func asksChange(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(ctxAsksChange, true)
		return next(c)
	}
}

// clusterPermission is what a request of a cluster's route asks of the
// member: Read for a page or a read, Operate for a change and for the
// page of one (asksChange).
func clusterPermission(c echo.Context) orgs.Permission {
	if asks, _ := c.Get(ctxAsksChange).(bool); readOnly(c.Request().Method) && !asks {
		return orgs.Read
	}
	return orgs.Operate
}

// memberCluster is the signed-in user's cluster named in the path; anyone
// else's, or a deleted one, is not found.
func (h *Handlers) memberCluster(c echo.Context) (queries.Cluster, error) {
	who, err := h.acting(c)
	if err != nil {
		return queries.Cluster{}, err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return queries.Cluster{}, err
	}
	// What reads (GET) any member may; what changes, and the pages that
	// ask before a change, those who operate the organization's clusters.
	// The actions that take the cluster found here act on it as the
	// member's role allowed.
	cl, err := h.Clusters.GetFor(c.Request().Context(), who, clusterPermission(c), id)
	if errors.Is(err, clusters.ErrNotFound) {
		return cl, h.clusterNotFound(c, who, id)
	}
	return cl, err
}

// clusterNotFound answers for cluster id, not found in the organization
// who works in: 404; for a console page (GET) of a cluster of another of
// the user's organizations (a notice's link, a colleague's), a 404 that
// offers to switch there.
func (h *Handlers) clusterNotFound(c echo.Context, who orgs.Acting, id int64) error {
	if readOnly(c.Request().Method) && !isAPI(c) {
		o, err := h.Clusters.OrgOf(c.Request().Context(), who.UserID, id)
		if err == nil && o.ID != who.OrgID {
			return &clusterElsewhere{orgID: o.ID, orgName: o.Name}
		}
	}
	return errClusterNotFound
}

// clusterElsewhere answers a console page of a cluster in another of the
// user's organizations than the one they work in: 404 here, with a
// button to switch there and come back (handleError).
type clusterElsewhere struct {
	orgID   int64
	orgName string
}

func (e *clusterElsewhere) Error() string {
	return fmt.Sprintf("the cluster is in organization %d", e.orgID)
}

func clusterView(c queries.Cluster) views.Cluster {
	changeable := !c.DeleteRequestedAt.Valid && c.Status != clusters.StatusDeleted
	v := views.Cluster{
		ID: c.ID, Name: c.Name, Description: c.Description,
		KubernetesVersion: c.KubernetesVersion, AccessMode: c.PublicAccessMode, Backend: c.Backend,
		NodePort: c.NodePort.Int32, KonnectivityPort: c.KonnectivityNodePort.Int32, LBAddress: c.LbAddress,
		Status: c.Status, StatusMessage: c.StatusMessage, Endpoint: c.Endpoint,
		Generation: c.Generation, ObservedGeneration: c.ObservedGeneration,
		Created: c.CreatedAt.Time, Ready: c.ReadyAt.Time,
		CanRetry:    c.Status == clusters.StatusFailed,
		CanDownload: c.Status == clusters.StatusReady && c.Endpoint != "",
		CanChange:   changeable && !clusters.Suspended(c),
		CanDelete:   changeable,
	}
	if c.Status == clusters.StatusSuspended {
		v.SuspendedSince = c.SuspendedAt.Time
	}
	return v
}

// planEndpoint names, on v, the address that cl answers at once ready,
// while it has none: the edge routes the name from the start.
func (h *Handlers) planEndpoint(ctx context.Context, v *views.Cluster, cl queries.Cluster) error {
	if cl.Endpoint != "" || cl.Status == clusters.StatusDeleting || cl.Status == clusters.StatusDeleted {
		return nil
	}
	rt, err := h.Clusters.Runtime(ctx)
	if err != nil {
		return err
	}
	if rt.APIBaseDomain != "" {
		v.PlannedEndpoint = rt.PublicEndpoint(cl.Slug)
	}
	return nil
}

// clusterSummaryView is a cluster as the list and the dashboard show it:
// they show no action, and read no more columns than they show.
func clusterSummaryView(c queries.ClusterListSummaryForMemberRow) views.Cluster {
	return views.Cluster{
		ID: c.ID, Name: c.Name, Status: c.Status,
		KubernetesVersion: c.KubernetesVersion, AccessMode: c.PublicAccessMode,
		Endpoint: c.Endpoint, Created: c.CreatedAt.Time,
	}
}

func clusterEventViews(events []queries.ClusterEvent) []views.ClusterEvent {
	out := make([]views.ClusterEvent, len(events))
	for i, e := range events {
		out[i] = views.ClusterEvent{ID: e.ID, Level: e.Level, Reason: e.Reason, Message: e.Message, Time: e.CreatedAt.Time,
			Count: e.Count, LastSeen: e.LastSeenAt.Time}
	}
	return out
}

// provisionReasons are the reasons cl's events gave, for its provisioning
// steps, while it has some to show (it is being made, or it failed);
// nil otherwise, without asking the database.
func (h *Handlers) provisionReasons(c echo.Context, who orgs.Acting, cl queries.Cluster) ([]string, error) {
	switch cl.Status {
	case clusters.StatusPending, clusters.StatusProvisioning, clusters.StatusFailed:
		return h.Clusters.EventReasons(c.Request().Context(), who, cl.ID)
	}
	return nil, nil
}
