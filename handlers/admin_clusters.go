package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// showAdminClustersPage is GET /admin/clusters: every user's clusters,
// filtered, newest first, a page before (?before=) or after (?after=) a
// cluster id.
func (h *Handlers) showAdminClustersPage(c echo.Context) error {
	f := adminClusterFilter(c)
	key, desc, pg := listSort(c, clusters.AdminSortKeys)
	m := views.AdminClusterList{
		Search: f.Search, Status: f.Status, Owner: f.OwnerEmail, Version: f.KubernetesVersion, Access: f.AccessMode,
		Sort: views.Sort{Path: "/admin/clusters", Query: adminClusterQuery(f), Key: key, Desc: desc},
	}
	var rows []queries.AdminClusterListOlderRow
	if key == "" {
		page, err := h.Clusters.AdminList(c.Request().Context(), f, queryID(c, "before"), queryID(c, "after"))
		if err != nil {
			return err
		}
		rows = page.Clusters
		if page.Older != 0 {
			m.OlderURL = adminClustersURL(f, "before", page.Older)
		}
		if page.Newer != 0 {
			m.NewerURL = adminClustersURL(f, "after", page.Newer)
		}
	} else {
		var more bool
		var err error
		if rows, more, err = h.Clusters.AdminListSorted(c.Request().Context(), f, key, desc, pg); err != nil {
			return err
		}
		if more {
			m.OlderURL = m.Sort.URL(key, desc, pg+1)
		}
		if pg > 1 {
			m.NewerURL = m.Sort.URL(key, desc, 1)
		}
	}
	for _, r := range rows {
		m.Clusters = append(m.Clusters, views.AdminClusterRow{
			ID: r.ID, Name: r.Name, Slug: r.Slug, OwnerID: r.OwnerID, OwnerEmail: r.OwnerEmail,
			Status: r.Status, Version: r.KubernetesVersion, Access: r.PublicAccessMode, Nodes: r.Nodes, Created: timeOf(r.CreatedAt),
		})
	}
	h.viewAsAPICall(c, "adminListClusters", nil)
	return render(c, http.StatusOK, views.AdminClustersPage(m))
}

// adminClusterFilter reads the cluster list's filters: ?q=, ?status=,
// ?owner=, ?version= and ?access=, for the back office and the admin API.
func adminClusterFilter(c echo.Context) clusters.AdminFilter {
	return clusters.AdminFilter{
		Search:            strings.TrimSpace(c.QueryParam("q")),
		Status:            c.QueryParam("status"),
		OwnerEmail:        strings.TrimSpace(c.QueryParam("owner")),
		KubernetesVersion: strings.TrimSpace(c.QueryParam("version")),
		AccessMode:        c.QueryParam("access"),
	}
}

// adminClusterQuery is the query of the cluster list's filters f.
func adminClusterQuery(f clusters.AdminFilter) url.Values {
	v := url.Values{}
	for k, s := range map[string]string{
		"q": f.Search, "status": f.Status, "owner": f.OwnerEmail, "version": f.KubernetesVersion, "access": f.AccessMode,
	} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// adminClustersURL is a page of the cluster list under f: the clusters
// before or after (cursor) the cluster id.
func adminClustersURL(f clusters.AdminFilter, cursor string, id int64) string {
	v := adminClusterQuery(f)
	v.Set(cursor, strconv.FormatInt(id, 10))
	return "/admin/clusters?" + v.Encode()
}

// showAdminClusterPage is GET /admin/clusters/:id (and its metrics over
// ?range=, which the range switch asks for): any user's cluster; for
// htmx, the metrics alone.
func (h *Handlers) showAdminClusterPage(c echo.Context) error {
	m, err := h.adminClusterView(c, views.NewForm(), views.NewForm())
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	h.viewAsAPICall(c, "adminGetCluster", nil, c.Param("id"))
	return renderPageOrFragment(c, views.AdminClusterPage(m), views.ClusterMetricsBody(m.Metrics))
}

// adminClusterView is the cluster of the path as its admin page shows it,
// with del and susp, the delete and suspend confirmations.
func (h *Handlers) adminClusterView(c echo.Context, del, susp views.Form) (m views.AdminCluster, err error) {
	ctx := c.Request().Context()
	id, err := clusterIDParam(c)
	if err != nil {
		return m, err
	}
	d, err := h.Clusters.AdminGet(ctx, id)
	if errors.Is(err, clusters.ErrNotFound) {
		return m, echo.ErrNotFound
	}
	if err != nil {
		return m, err
	}
	cl := d.Cluster
	r, err := metricsRangeParam(c)
	if err != nil {
		return m, err
	}
	s, err := h.ClusterMetrics.Series(ctx, cl.ID, r, time.Now())
	if err != nil {
		return m, err
	}
	m = views.AdminCluster{
		Cluster: clusterView(cl), Slug: cl.Slug, OwnerID: cl.OwnerID,
		Metrics:   clusterMetricsView(cl, s, fmt.Sprintf("/admin/clusters/%d", cl.ID)),
		CanDelete: cl.Status != clusters.StatusDeleted, DeleteForm: del,
		CanSuspend: cl.Status == clusters.StatusReady && !cl.DeleteRequestedAt.Valid, SuspendForm: susp,
		CanResume: cl.Status == clusters.StatusSuspended && !cl.DeleteRequestedAt.Valid,
	}
	if cl.Status == clusters.StatusSuspended {
		m.SuspendedSince = cl.SuspendedAt.Time
	}
	m.OwnerEmail, m.Alerts = d.Owner.Email, d.Alerts
	events, err := h.Clusters.AdminLatestEvents(ctx, cl.ID)
	if err != nil {
		return m, err
	}
	m.Events = clusterEventViews(events)
	for _, n := range d.Nodes {
		m.Nodes = append(m.Nodes, views.AdminClusterNode{Name: n.Name, Status: n.Status, Version: n.KubeletVersion, LastSeen: timeOf(n.LastSeen)})
	}
	for _, t := range d.Tokens {
		m.Tokens = append(m.Tokens, views.AdminJoinToken{
			ID: t.ID, TokenID: t.TokenID, Description: t.Description, Created: timeOf(t.CreatedAt),
			Expires: timeOf(t.ExpiresAt), LastUsed: timeOf(t.LastUsed), Revoked: timeOf(t.RevokedAt),
		})
	}
	return m, nil
}

// adminClusterAction is an admin's action on any user's cluster, POSTed
// to /admin/clusters/:id/<path>.
type adminClusterAction struct {
	path string
	// confirm is the form field in which the admin typed the cluster's
	// slug; empty for an action that asks for none.
	confirm string
	// run does it, with what the admin typed in confirm.
	run func(s *clusters.Service, ctx context.Context, id int64, typed string, a audit.Actor) (queries.Cluster, error)
	// refused is the error of a cluster the action does not apply to in
	// its state: flashed on its page.
	refused error
	// done is the flash once it is done (or started).
	done string
}

// adminClusterActions: retry a failed cluster's work; delete a cluster;
// suspend a ready one (its control plane scaled to 0, joins refused);
// resume a suspended one.
var adminClusterActions = []adminClusterAction{
	{
		path: "retry", refused: clusters.ErrNotFailed, done: "FlashAdminClusterRetried",
		run: func(s *clusters.Service, ctx context.Context, id int64, _ string, a audit.Actor) (queries.Cluster, error) {
			return s.AdminRetry(ctx, id, a)
		},
	},
	{
		path: "delete", confirm: "confirm", refused: clusters.ErrAlreadyDeleted, done: "FlashAdminClusterDeleteRequested",
		run: (*clusters.Service).AdminDelete,
	},
	{
		path: "suspend", confirm: "suspend_confirm", refused: clusters.ErrNotSuspendable, done: "FlashAdminClusterSuspended",
		run: (*clusters.Service).AdminSuspend,
	},
	{
		path: "resume", refused: clusters.ErrNotSuspended, done: "FlashAdminClusterResumed",
		run: func(s *clusters.Service, ctx context.Context, id int64, _ string, a audit.Actor) (queries.Cluster, error) {
			return s.AdminResume(ctx, id, a)
		},
	},
}

// changeAdminCluster does a on the cluster of the path and goes back to
// its page, with a flash; a mistyped slug shows the page again with the
// error at the field. Another user's cluster is any admin's; a cluster
// that does not exist, or a user who is no longer an admin, is 404.
func (h *Handlers) changeAdminCluster(a adminClusterAction) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := clusterIDParam(c)
		if err != nil {
			return err
		}
		f := views.NewForm()
		if a.confirm != "" {
			f = formFrom(c, a.confirm)
		}
		_, err = a.run(h.Clusters, c.Request().Context(), id, f.Value(a.confirm), actor(c))
		var fe clusters.FieldErrors
		switch {
		case errors.Is(err, clusters.ErrNotFound), errors.Is(err, adminauth.ErrNotAdmin):
			return echo.ErrNotFound
		case errors.Is(err, a.refused):
			h.flashError(c, err.Error())
		case errors.As(err, &fe):
			for k, v := range fe {
				f.Errors[k] = v
			}
			del, susp := f, views.NewForm()
			if a.path == "suspend" {
				del, susp = susp, f
			}
			m, err := h.adminClusterView(c, del, susp)
			if err != nil {
				return err
			}
			return render(c, http.StatusUnprocessableEntity, views.AdminClusterPage(m))
		case err != nil:
			return err
		default:
			h.flash(c, a.done)
		}
		return redirect(c, fmt.Sprintf("/admin/clusters/%d", id))
	}
}
