package handlers

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/views"
)

// inboxSize is how many notifications a page of the inbox shows;
// inboxClusters how many clusters its filter offers.
const (
	inboxSize     = 50
	inboxClusters = 100
)

// showNotificationsInbox is the user's notifications, newest first,
// grouped by the cluster they are about, each linked to its object:
// ?show=unread keeps the unread ones, ?cluster=ID those of one cluster,
// ?before=ID pages on. The filters run in SQL over the reader's own
// notifications only, so a cluster filter can show nothing of anyone
// else's.
func (h *Handlers) showNotificationsInbox(c echo.Context) error {
	u, _ := currentUser(c)
	ctx := c.Request().Context()
	f := accounts.InboxFilter{Unread: c.QueryParam("show") == "unread", ClusterID: queryID(c, "cluster"), Before: queryID(c, "before")}
	rows, err := h.Accounts.Inbox(ctx, u.ID, f, inboxSize+1)
	if err != nil {
		return err
	}
	clusters, err := h.Accounts.InboxClusters(ctx, u.ID, inboxClusters)
	if err != nil {
		return err
	}
	m := views.NotificationsInbox{Unread: f.Unread, ClusterID: f.ClusterID, Any: len(rows) > 0}
	if !m.Any && (f.Unread || f.ClusterID != 0 || f.Before != 0) {
		if m.Any, err = h.Accounts.AnyNotification(ctx, u.ID); err != nil {
			return err
		}
	}
	if len(rows) > inboxSize {
		rows = rows[:inboxSize]
		m.Older = olderInboxPath(f, rows[len(rows)-1].ID)
	}
	for _, cl := range clusters {
		m.Clusters = append(m.Clusters, views.NotificationCluster{ID: cl.ClusterID, Name: cl.ClusterName})
	}
	groups := map[int64]int{} // cluster id (0: none) → index in m.Groups
	for _, n := range rows {
		o := notify.ObjectOf(n)
		title, body := notify.Word(locale.From(ctx), n)
		item := views.Notification{Title: title, Body: body, Created: n.CreatedAt.Time, Unread: !n.ReadAt.Valid, Link: notify.Link(n)}
		i, ok := groups[o.ClusterID]
		if !ok {
			i = len(m.Groups)
			groups[o.ClusterID] = i
			m.Groups = append(m.Groups, views.NotificationGroup{ClusterID: o.ClusterID, Cluster: o.Cluster})
		}
		m.Groups[i].Items = append(m.Groups[i].Items, item)
	}
	h.viewAsAPICall(c, "listNotifications", nil)
	return render(c, http.StatusOK, views.NotificationsPage(m))
}

// olderInboxPath is the inbox's next page under filter f, below the
// notification with id last.
func olderInboxPath(f accounts.InboxFilter, last int64) string {
	q := url.Values{"before": {strconv.FormatInt(last, 10)}}
	if f.Unread {
		q.Set("show", "unread")
	}
	if f.ClusterID != 0 {
		q.Set("cluster", strconv.FormatInt(f.ClusterID, 10))
	}
	return "/notifications?" + q.Encode()
}

func (h *Handlers) markNotificationsRead(c echo.Context) error {
	u, _ := currentUser(c)
	if _, err := h.Accounts.MarkNotificationsRead(c.Request().Context(), u.ID, actor(c)); err != nil {
		return err
	}
	return redirect(c, "/notifications")
}
