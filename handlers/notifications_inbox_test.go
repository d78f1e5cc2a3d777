package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/queries"
)

// notice is a notification as its reader reads it.
type notice struct {
	title  string
	body   string
	unread bool
}

// notices are the user's notifications of kind, oldest first, as a reader
// of English reads them.
func (b *testBundle) notices(t *testing.T, email string, kind notify.Kind) []notice {
	t.Helper()
	catalog, err := locale.New()
	require.NoError(t, err)
	rows, err := queries.New(b.pool).NotificationListByUser(context.Background(), queries.NotificationListByUserParams{UserID: b.userID(t, email), RowLimit: 1000})
	require.NoError(t, err)
	var out []notice
	for _, n := range slices.Backward(rows) {
		if n.Kind == string(kind) {
			title, body := notify.Word(catalog.For("en"), n)
			out = append(out, notice{title: title, body: body, unread: !n.ReadAt.Valid})
		}
	}
	return out
}

func TestNotificationsInbox(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c, email := b.signedUpUser(t, "inbox")
	other, _ := b.signedUpUser(t, "bystander")
	id := b.userID(t, email)
	for _, title := range []string{"Node worker-1 is not ready", "Node worker-1 is ready again"} {
		_, err := b.pool.Exec(ctx, "INSERT INTO notifications (user_id, kind, title) VALUES ($1, 'node_not_ready', $2)", id, title)
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

// TestNotificationsInReadersLanguage writes a notice while its reader
// reads English and reads it after they switched to Chinese: it is worded
// when read. Notifications stored as words, before messages were, still
// show as written.
func TestNotificationsInReadersLanguage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c, email := b.signedUpUser(t, "reader")
	id := b.userID(t, email)
	_, err := b.pool.Exec(ctx, "INSERT INTO notifications (user_id, kind, title, body) VALUES ($1, 'cluster_ready', 'Old title', 'Old body')", id)
	require.NoError(t, err)
	user, err := queries.New(b.pool).UserGetByID(ctx, id)
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		_, err := notify.Notices{Box: b.box}.Tell(ctx, tx, user, notify.ClusterReady, notify.EmailClusterReady, map[string]any{"Cluster": "demo", "ClusterID": 7})
		return err
	}))

	_, page := c.get("/notifications")
	require.Contains(t, page, "Cluster demo is ready")
	require.Contains(t, page, "Your cluster demo is ready.")
	require.Contains(t, page, "Old title")

	resp := c.post(profilePage, profilePage, url.Values{"name": {"Reader"}, "language": {"zh-CN"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	_, page = c.get("/notifications")
	require.Contains(t, page, "集群 demo 已就绪")
	require.Contains(t, page, "您的集群 demo 已就绪。")
	require.NotContains(t, page, "Cluster demo is ready")
	require.Contains(t, page, "Old title", "an old notification keeps its words")
	require.Contains(t, page, "Old body")
}
