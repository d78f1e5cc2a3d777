package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// The overview lists at most overviewRows clusters and events, and
// overviewNotifications notifications.
const (
	overviewRows          = 8
	overviewNotifications = 5
)

// showHomePage is the landing page, or the overview for a signed-in user.
func (h *Handlers) showHomePage(c echo.Context) error {
	u, ok := currentUser(c)
	if !ok {
		return render(c, http.StatusOK, views.Home())
	}
	if gated, err := h.gate(c, u); gated {
		return err
	}
	ctx := c.Request().Context()
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	if u.Role == adminauth.RoleAdmin {
		views.PageOf(ctx).LoopbackBaseURL = h.loopbackBaseURL()
	}
	o, err := h.Clusters.Overview(ctx, who, overviewRows)
	if err != nil {
		return err
	}
	notes, err := h.Accounts.Notifications(ctx, u.ID, 0, overviewNotifications)
	if err != nil {
		return err
	}
	f := o.Figures
	// River is asked only when a cluster failed.
	var retries map[int64]clusters.Retry
	if f.ClustersFailed > 0 {
		if retries, err = h.Clusters.PendingRetries(ctx, who); err != nil {
			return err
		}
	}
	// A failed cluster that River still retries is in progress.
	f.ClustersFailed -= int64(len(retries))
	f.ClustersInProgress += int64(len(retries))
	m := views.Overview{
		Name: u.Name, Clusters: f.Clusters, Ready: f.ClustersReady, InProgress: f.ClustersInProgress, Failed: f.ClustersFailed,
		Nodes: f.Nodes, NodesReady: f.NodesReady, MostNodes: f.NodesMostInACluster,
		Plan: f.PlanName, MaxClusters: f.PlanMaxClusters, MaxNodes: f.PlanMaxNodesPerCluster, Unread: views.PageOf(ctx).Unread,
	}
	var first int64
	for _, cl := range o.Clusters {
		v := views.OverviewCluster{ID: cl.ID, Name: cl.Name, Status: cl.Status, Nodes: cl.Nodes, NodesReady: cl.NodesReady}
		if _, ok := retries[cl.ID]; ok {
			v.Status = views.ClusterStatusRetrying
		}
		m.List = append(m.List, v)
		if first == 0 {
			first = cl.ID
		}
	}
	// The checklist's steps lead to the newest ready cluster, else the
	// newest.
	for _, cl := range o.Clusters {
		if cl.Status == clusters.StatusReady {
			first = cl.ID
			break
		}
	}
	m.Checklist = views.UserChecklist(first, f.Clusters > 0, f.HasJoinToken, f.HasNode, f.DownloadedKubeconfig)
	for _, e := range o.Events {
		m.Events = append(m.Events, views.OverviewEvent{ClusterID: e.ClusterID, ClusterName: e.ClusterName, Level: e.Level, Reason: e.Reason, Time: e.CreatedAt})
	}
	for _, n := range notes {
		title, _ := notify.Word(locale.From(ctx), n)
		m.Notifications = append(m.Notifications, views.OverviewNotification{Title: title, Href: notificationHref(n), Time: n.CreatedAt.Time, Unread: !n.ReadAt.Valid})
	}
	h.viewAsAPICall(c, "listClusters", nil)
	return render(c, http.StatusOK, views.OverviewPage(m))
}

// notificationHref is the page of a notification's object: its cluster's
// when it names one, else the inbox.
func notificationHref(n queries.Notification) templ.SafeURL {
	var p struct {
		ClusterID json.Number `json:"ClusterID"`
	}
	dec := json.NewDecoder(bytes.NewReader(n.Params))
	dec.UseNumber()
	if dec.Decode(&p) == nil {
		if id, err := p.ClusterID.Int64(); err == nil && id > 0 {
			return templ.SafeURL(fmt.Sprintf("/clusters/%d", id))
		}
	}
	return "/notifications"
}

// showStatus is the status panel fragment the home page loads with htmx.
func (h *Handlers) showStatus(c echo.Context) error {
	_, err := h.ready(c.Request().Context())
	if err != nil {
		h.Logger.WarnContext(c.Request().Context(), "platform not ready", "error", err)
	}
	return render(c, http.StatusOK, views.Status(err == nil))
}
