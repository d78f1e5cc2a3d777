package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/queries"
)

func TestNotificationsInbox(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	c, email := b.SignedUpUser(t, "inbox")
	other, _ := b.SignedUpUser(t, "bystander")
	id := b.UserID(t, email)
	for _, title := range []string{"Node worker-1 is not ready", "Node worker-1 is ready again"} {
		_, err := b.Pool.Exec(ctx, "INSERT INTO notifications (user_id, kind, title) VALUES ($1, 'node_not_ready', $2)", id, title)
		require.NoError(t, err)
	}

	_, page := c.Get("/")
	require.Contains(t, page, `data-testid="unread-count">2</mark>`)
	code, page := c.Get("/notifications")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, "Node worker-1 is not ready")
	require.Contains(t, page, "Node worker-1 is ready again")

	_, page = other.Get("/notifications")
	require.Contains(t, page, `data-testid="notifications-empty"`, "each user sees only their own")
	require.NotContains(t, page, "worker-1")

	resp := c.Post("/notifications", "/notifications/read", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page = c.Get("/")
	require.NotContains(t, page, `data-testid="unread-count"`)
	require.Contains(t, b.Audits(t, id), "notification.read_all")

	code, _ = b.Client(t).Get("/notifications")
	require.Equal(t, http.StatusSeeOther, code, "visitors are sent to sign in")
}

// TestNotificationsInReadersLanguage writes a notice while its reader
// reads English and reads it after they switched to Chinese: it is worded
// when read. Notifications stored as words, before messages were, still
// show as written.
func TestNotificationsInReadersLanguage(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	c, email := b.SignedUpUser(t, "reader")
	id := b.UserID(t, email)
	_, err := b.Pool.Exec(ctx, "INSERT INTO notifications (user_id, kind, title, body) VALUES ($1, 'cluster_ready', 'Old title', 'Old body')", id)
	require.NoError(t, err)
	user, err := queries.New(b.Pool).UserGetByID(ctx, id)
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, b.Pool, func(tx pgx.Tx) error {
		_, err := notify.Notices{Box: b.Box}.Tell(ctx, tx, user, notify.ClusterReady, notify.EmailClusterReady, map[string]any{"Cluster": "demo", "ClusterID": 7})
		return err
	}))

	_, page := c.Get("/notifications")
	require.Contains(t, page, "Cluster demo is ready")
	require.Contains(t, page, "Your cluster demo is ready.")
	require.Contains(t, page, "Old title")

	resp := c.Post(handlerstest.ProfilePage, handlerstest.ProfilePage, url.Values{"name": {"Reader"}, "language": {"zh-CN"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, page = c.Get("/notifications")
	require.Contains(t, page, "集群 demo 已就绪")
	require.Contains(t, page, "您的集群 demo 已就绪。")
	require.NotContains(t, page, "Cluster demo is ready")
	require.Contains(t, page, "Old title", "an old notification keeps its words")
	require.Contains(t, page, "Old body")
}
