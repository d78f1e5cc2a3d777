package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/views"
)

// inboxSize is how many notifications the page shows; inboxWindow how
// many of the newest it filters them from.
const (
	inboxSize   = 50
	inboxWindow = 500
)

// showNotificationsInbox is the user's notifications, newest first,
// grouped by the cluster they are about, each linked to its object:
// ?show=unread keeps the unread ones, ?cluster=ID those of one cluster.
// Only the reader's own notifications are read, so a cluster filter can
// show nothing of anyone else's.
func (h *Handlers) showNotificationsInbox(c echo.Context) error {
	u, _ := currentUser(c)
	ctx := c.Request().Context()
	rows, err := h.Accounts.Notifications(ctx, u.ID, 0, inboxWindow)
	if err != nil {
		return err
	}
	m := views.NotificationsInbox{Unread: c.QueryParam("show") == "unread"}
	m.ClusterID, _ = strconv.ParseInt(c.QueryParam("cluster"), 10, 64)
	groups := map[int64]int{} // cluster id (0: none) → index in m.Groups
	seen := map[int64]bool{}
	shown := 0
	for _, n := range rows {
		o := notify.ObjectOf(n)
		if o.ClusterID != 0 && !seen[o.ClusterID] {
			seen[o.ClusterID] = true
			m.Clusters = append(m.Clusters, views.NotificationCluster{ID: o.ClusterID, Name: o.Cluster})
		}
		if (m.Unread && n.ReadAt.Valid) || (m.ClusterID != 0 && o.ClusterID != m.ClusterID) || shown == inboxSize {
			continue
		}
		shown++
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
	m.Any = len(rows) > 0
	h.viewAsAPICall(c, "listNotifications", nil)
	return render(c, http.StatusOK, views.NotificationsPage(m))
}

func (h *Handlers) markNotificationsRead(c echo.Context) error {
	u, _ := currentUser(c)
	if _, err := h.Accounts.MarkNotificationsRead(c.Request().Context(), u.ID, actor(c)); err != nil {
		return err
	}
	return redirect(c, "/notifications")
}
