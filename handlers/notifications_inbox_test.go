package handlers_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/queries"
)

func TestNotificationsInbox(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c, email := b.signedUpUser(t, "inbox")
	other, _ := b.signedUpUser(t, "bystander")
	q := queries.New(b.pool)
	id := b.userID(t, email)
	for _, title := range []string{"Node worker-1 is not ready", "Node worker-1 is ready again"} {
		_, err := q.NotificationCreate(ctx, queries.NotificationCreateParams{UserID: id, Kind: "node_not_ready", Title: title})
		require.NoError(t, err)
	}

	_, page := c.get("/")
	require.Contains(t, page, `data-testid="unread-count">2</mark>`)
	code, page := c.get("/notifications")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, "Node worker-1 is not ready")
	require.Contains(t, page, "Node worker-1 is ready again")

	_, page = other.get("/notifications")
	require.Contains(t, page, `data-testid="notifications-empty"`, "each user sees only their own")
	require.NotContains(t, page, "worker-1")

	resp := c.post("/notifications", "/notifications/read", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page = c.get("/")
	require.NotContains(t, page, `data-testid="unread-count"`)
	require.Contains(t, b.audits(t, id), "notification.read_all")

	code, _ = b.client(t).get("/notifications")
	require.Equal(t, http.StatusSeeOther, code, "visitors are sent to sign in")
}
