package handlers

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// inboxSize is how many notifications the page shows.
const inboxSize = 50

func (h *Handlers) showNotificationsInbox(c echo.Context) error {
	u, _ := currentUser(c)
	ctx := c.Request().Context()
	rows, err := queries.New(h.Pool).NotificationListByUser(ctx, queries.NotificationListByUserParams{UserID: u.ID, RowLimit: inboxSize})
	if err != nil {
		return fmt.Errorf("list notifications: %w", err)
	}
	items := make([]views.Notification, len(rows))
	for i, n := range rows {
		title, body := notify.Word(locale.From(ctx), n)
		items[i] = views.Notification{Title: title, Body: body, Created: n.CreatedAt.Time, Unread: !n.ReadAt.Valid}
	}
	return render(c, http.StatusOK, views.NotificationsPage(items))
}

func (h *Handlers) markNotificationsRead(c echo.Context) error {
	u, _ := currentUser(c)
	ctx := c.Request().Context()
	n, err := queries.New(h.Pool).NotificationMarkAllRead(ctx, u.ID)
	if err != nil {
		return fmt.Errorf("mark notifications read: %w", err)
	}
	if n > 0 {
		if err := audit.Record(ctx, queries.New(h.Pool), actor(c), audit.Event{
			Action: "notification.read_all", TargetType: "user", TargetID: fmt.Sprint(u.ID), Details: map[string]any{"count": n},
		}); err != nil {
			return err
		}
	}
	return redirect(c, "/notifications")
}
