package handlers

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/views"
)

// preferenceField is the form field of one checkbox of the matrix.
func preferenceField(k notify.Kind, c notify.Channel) string {
	return "pref." + string(k) + "." + string(c)
}

// parsePreferences reads the matrix form of kinds: a pair is on when its
// checkbox was sent checked; anything else in the form is ignored.
func parsePreferences(form url.Values, kinds []notify.Kind) accounts.Preferences {
	p := make(accounts.Preferences, len(kinds))
	for _, k := range kinds {
		p[k] = make(map[notify.Channel]bool, len(notify.Channels))
		for _, c := range notify.Channels {
			p[k][c] = form.Get(preferenceField(k, c)) == "on"
		}
	}
	return p
}

// notificationSettings is the page's view of the user's matrix, for
// kinds.
func notificationSettings(m map[notify.Kind]map[notify.Channel]bool, kinds []notify.Kind) views.NotificationSettings {
	var s views.NotificationSettings
	for _, c := range notify.Channels {
		s.ChannelLabelIDs = append(s.ChannelLabelIDs, "NotifyChannel_"+string(c))
	}
	for _, k := range kinds {
		row := views.NotificationRow{LabelID: "NotifyKind_" + string(k)}
		for _, c := range notify.Channels {
			row.Cells = append(row.Cells, views.NotificationCell{
				Field: preferenceField(k, c), ChannelLabelID: "NotifyChannel_" + string(c), On: m[k][c],
			})
		}
		s.Rows = append(s.Rows, row)
	}
	return s
}

func (h *Handlers) showNotificationsPage(c echo.Context) error {
	h.viewAsAPICall(c, "getNotificationSettings", nil)
	return h.renderNotificationsPage(c, http.StatusOK, views.NewForm(), nil, nil)
}

func (h *Handlers) updateNotifications(c echo.Context) error {
	u, _ := currentUser(c)
	form, err := c.FormParams()
	if err != nil {
		return fmt.Errorf("read preferences form: %w", err)
	}
	if err := h.Accounts.SetNotificationPreferences(c.Request().Context(), u.ID, parsePreferences(form, notify.KindsFor(u.Role == adminauth.RoleAdmin)), actor(c)); err != nil {
		return err
	}
	h.flash(c, "FlashNotificationsSaved")
	return redirect(c, "/settings/notifications")
}
