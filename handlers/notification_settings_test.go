package handlers_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/notify"
)

// allBut is the form with every pair checked except one.
func allBut(k notify.Kind, c notify.Channel) url.Values {
	f := url.Values{}
	for _, kk := range notify.Kinds {
		for _, cc := range notify.Channels {
			if kk != k || cc != c {
				f.Set("pref."+string(kk)+"."+string(cc), "on")
			}
		}
	}
	return f
}

func TestNotificationPreferences(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "notified")
	id := b.UserID(t, email)

	code, page := c.Get(handlerstest.NotificationsPage)
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, page, "NotifyKind_", "every kind has a label")
	require.NotContains(t, page, "NotifyChannel_", "every channel has a label")
	for _, k := range notify.KindsFor(false) {
		for _, ch := range notify.Channels {
			require.Equal(t, notify.Default(k, ch), handlerstest.Checkbox(t, page, k, ch), "%s/%s shows the default", k, ch)
		}
	}
	require.NotContains(t, page, string(notify.EdgeOutOfStep), "admins' kinds are not a user's")

	// Verifying the address signed the user in once: one new-sign-in email.
	require.Equal(t, 1, b.EmailJobs(t, email, "NewSignIn"))

	resp := c.Post(handlerstest.NotificationsPage, handlerstest.NotificationsPage, allBut(notify.SecuritySignIn, notify.Email))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, page = c.Get(handlerstest.NotificationsPage)
	require.Contains(t, page, "Your notification preferences were saved.")
	require.False(t, handlerstest.Checkbox(t, page, notify.SecuritySignIn, notify.Email))
	require.True(t, handlerstest.Checkbox(t, page, notify.ClusterReady, notify.Email), "a pair off by default is now on")
	require.Contains(t, b.Audits(t, id), "user.update_notifications")

	b.SignIn(t, email, "password of notified")
	require.Equal(t, 1, b.EmailJobs(t, email, "NewSignIn"), "no new-sign-in email once turned off")

	resp = c.Post(handlerstest.NotificationsPage, handlerstest.NotificationsPage, allBut("", ""))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	b.SignIn(t, email, "password of notified")
	require.Equal(t, 2, b.EmailJobs(t, email, "NewSignIn"), "back on")
	signIns := 0
	for _, m := range b.WaitMessages(t, email, 3) { // code, 2 new sign-ins
		if m.Subject == "New sign-in to your KubeBYON account" {
			signIns++
		}
	}
	require.Equal(t, 2, signIns)
}

// TestAdminNotificationPreferences: admins also choose how they hear of
// edges out of step; saving the page keeps that choice, and a user's
// saving never touches it.
func TestAdminNotificationPreferences(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "notified-admin")
	_, page := admin.Get(handlerstest.NotificationsPage)
	require.True(t, handlerstest.Checkbox(t, page, notify.EdgeOutOfStep, notify.Email), "on by default")
	require.Contains(t, page, "Admin: an edge of the public entry is out of step")

	resp := admin.Post(handlerstest.NotificationsPage, handlerstest.NotificationsPage, allBut(notify.EdgeOutOfStep, notify.Email))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page = admin.Get(handlerstest.NotificationsPage)
	require.False(t, handlerstest.Checkbox(t, page, notify.EdgeOutOfStep, notify.Email))
	require.True(t, handlerstest.Checkbox(t, page, notify.EdgeOutOfStep, notify.InApp))
}
