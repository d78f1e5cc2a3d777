package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/notify"
)

const notificationsPage = "/settings/notifications"

// checkbox finds a preference's checkbox on the page and whether it is
// checked.
func checkbox(t *testing.T, page string, k notify.Kind, c notify.Channel) bool {
	t.Helper()
	field := "pref." + string(k) + "." + string(c)
	i := strings.Index(page, `name="`+field+`"`)
	require.GreaterOrEqual(t, i, 0, "no checkbox %s", field)
	end := strings.Index(page[i:], ">")
	return strings.Contains(page[i:i+end], " checked")
}

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
	b := setup(t)
	c, email := b.signedUpUser(t, "notified")
	id := b.userID(t, email)

	code, page := c.get(notificationsPage)
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, page, "NotifyKind_", "every kind has a label")
	require.NotContains(t, page, "NotifyChannel_", "every channel has a label")
	for _, k := range notify.KindsFor(false) {
		for _, ch := range notify.Channels {
			require.Equal(t, notify.Default(k, ch), checkbox(t, page, k, ch), "%s/%s shows the default", k, ch)
		}
	}
	require.NotContains(t, page, string(notify.EdgeOutOfStep), "admins' kinds are not a user's")

	// Verifying the address signed the user in once: one new-sign-in email.
	require.Equal(t, 1, b.emailJobs(t, email, "NewSignIn"))

	resp := c.post(notificationsPage, notificationsPage, allBut(notify.SecuritySignIn, notify.Email))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	_, page = c.get(notificationsPage)
	require.Contains(t, page, "Your notification preferences were saved.")
	require.False(t, checkbox(t, page, notify.SecuritySignIn, notify.Email))
	require.True(t, checkbox(t, page, notify.ClusterReady, notify.Email), "a pair off by default is now on")
	require.Contains(t, b.audits(t, id), "user.update_notifications")

	b.signIn(t, email, "password of notified")
	require.Equal(t, 1, b.emailJobs(t, email, "NewSignIn"), "no new-sign-in email once turned off")

	resp = c.post(notificationsPage, notificationsPage, allBut("", ""))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	b.signIn(t, email, "password of notified")
	require.Equal(t, 2, b.emailJobs(t, email, "NewSignIn"), "back on")
	signIns := 0
	for _, m := range b.mail.WaitMessages(t, email, 3) { // code, 2 new sign-ins
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
	b := setup(t)
	admin, _ := b.signedUpAdmin(t, "notified-admin")
	_, page := admin.get(notificationsPage)
	require.True(t, checkbox(t, page, notify.EdgeOutOfStep, notify.Email), "on by default")
	require.Contains(t, page, "Admin: an edge of the public entry is out of step")

	resp := admin.post(notificationsPage, notificationsPage, allBut(notify.EdgeOutOfStep, notify.Email))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page = admin.get(notificationsPage)
	require.False(t, checkbox(t, page, notify.EdgeOutOfStep, notify.Email))
	require.True(t, checkbox(t, page, notify.EdgeOutOfStep, notify.InApp))
}
