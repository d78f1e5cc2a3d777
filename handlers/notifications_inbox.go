package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/views"
)

// inboxSize is how many notifications the page shows.
const inboxSize = 50

func (h *Handlers) showNotificationsInbox(c echo.Context) error {
	u, _ := currentUser(c)
	ctx := c.Request().Context()
	rows, err := h.Accounts.Notifications(ctx, u.ID, 0, inboxSize)
	if err != nil {
		return err
	}
	items := make([]views.Notification, len(rows))
	for i, n := range rows {
		title, body := notify.Word(locale.From(ctx), n)
		items[i] = views.Notification{Title: title, Body: body, Created: n.CreatedAt.Time, Unread: !n.ReadAt.Valid}
	}
	h.viewAsAPICall(c, "listNotifications", nil)
	return render(c, http.StatusOK, views.NotificationsPage(items))
}

func (h *Handlers) markNotificationsRead(c echo.Context) error {
	u, _ := currentUser(c)
	if _, err := h.Accounts.MarkNotificationsRead(c.Request().Context(), u.ID, actor(c)); err != nil {
		return err
	}
	return redirect(c, "/notifications")
}
