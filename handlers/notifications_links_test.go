package handlers_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/queries"
)

// TestNotificationsInboxLinksAndFilters: each notification links to what
// it is about (its node, its cluster, the billing page); the inbox groups
// them by cluster and filters to the unread ones or one cluster's, and a
// filter naming another user's cluster shows nothing of theirs.
func TestNotificationsInboxLinksAndFilters(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	c, email := b.SignedUpUser(t, "linked")
	other, otherEmail := b.SignedUpUser(t, "elsewhere")
	// In-app notices as Tell writes them (without the emails).
	tell := func(email string, kind notify.Kind, template string, data map[string]any) int64 {
		t.Helper()
		row, err := notify.Create(ctx, queries.New(b.Pool), b.UserID(t, email), kind, template, data)
		require.NoError(t, err)
		return row.ID
	}
	ready := tell(email, notify.ClusterReady, notify.EmailClusterReady, map[string]any{"Cluster": "alpha", "ClusterID": 41})
	tell(email, notify.NodeNotReady, notify.EmailNodeNotReady, map[string]any{"Cluster": "alpha", "ClusterID": 41, "Node": "worker-1", "Minutes": 5})
	tell(email, notify.ClusterFailed, notify.EmailClusterFailed, map[string]any{
		"Cluster": "beta", "ClusterID": 42, "Reason": "dial tcp 10.0.0.5:6443: connect: connection refused", notify.ReasonMessage: "ClusterFailureHostUnreachable",
	})
	tell(otherEmail, notify.ClusterReady, notify.EmailClusterReady, map[string]any{"Cluster": "secret-gamma", "ClusterID": 43})
	_, err := b.Pool.Exec(ctx, "UPDATE notifications SET read_at = now() WHERE id = $1", ready)
	require.NoError(t, err)

	code, page := c.Get("/notifications")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 2, strings.Count(page, `data-testid="notifications-group"`), "alpha and beta")
	require.Contains(t, page, `href="/clusters/41/nodes/worker-1" data-testid="notification-link"`)
	require.Contains(t, page, `href="/clusters/41" data-testid="notification-link"`)
	require.Contains(t, page, `href="/clusters/42" data-testid="notification-link"`)
	require.Contains(t, page, "could not reach the host cluster", "the failure in plain words")
	require.NotContains(t, page, "10.0.0.5", "not the raw error")
	require.NotContains(t, page, "secret-gamma")
	require.Contains(t, page, `<option value="41">alpha</option>`)

	_, page = c.Get("/notifications?cluster=41")
	require.Equal(t, 1, strings.Count(page, `data-testid="notifications-group"`))
	require.Equal(t, 2, strings.Count(page, `data-testid="notification"`))
	require.Contains(t, page, `<option value="41" selected>alpha</option>`)

	_, page = c.Get("/notifications?show=unread")
	require.Equal(t, 2, strings.Count(page, `data-testid="notification"`), "the read one is left out")

	_, page = c.Get("/notifications?cluster=43")
	require.Contains(t, page, `data-testid="notifications-none-match"`)
	require.NotContains(t, page, "secret-gamma")
	_, page = other.Get(fmt.Sprintf("/notifications?cluster=%d", 41))
	require.NotContains(t, page, "alpha")
}

// TestNotificationsInboxFiltersAll: the inbox's filters run over all the
// reader's notifications, not only the newest few hundred, and the inbox
// pages on under the filter it shows.
func TestNotificationsInboxFiltersAll(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	c, email := b.SignedUpUser(t, "hoarder")
	user := b.UserID(t, email)
	_, err := notify.Create(ctx, queries.New(b.Pool), user, notify.ClusterReady, notify.EmailClusterReady, map[string]any{"Cluster": "ancient", "ClusterID": 45})
	require.NoError(t, err)
	newer, err := notify.Create(ctx, queries.New(b.Pool), user, notify.ClusterReady, notify.EmailClusterReady, map[string]any{"Cluster": "busy", "ClusterID": 46})
	require.NoError(t, err)
	// 600 newer ones about cluster 46, as copies of the last.
	_, err = b.Pool.Exec(ctx, `INSERT INTO notifications (user_id, kind, title, body, message, params)
SELECT user_id, kind, title, body, message, params FROM notifications, generate_series(1, 600) WHERE id = $1`, newer.ID)
	require.NoError(t, err)

	_, page := c.Get("/notifications")
	require.Equal(t, 50, strings.Count(page, `data-testid="notification"`))
	require.Contains(t, page, `<option value="45">ancient</option>`, "the filter offers the cluster of an old notification")
	m := regexp.MustCompile(`href="([^"]+)" rel="next" data-testid="notifications-older"`).FindStringSubmatch(page)
	require.NotNil(t, m, "an older page")
	_, page = c.Get(html.UnescapeString(m[1]))
	require.Equal(t, 50, strings.Count(page, `data-testid="notification"`))

	_, page = c.Get("/notifications?cluster=45")
	require.Equal(t, 1, strings.Count(page, `data-testid="notification"`), "found under 600 newer ones")
	require.Contains(t, page, "ancient")
	require.NotContains(t, page, `data-testid="notifications-older"`)

	_, page = c.Get("/notifications?cluster=46&show=unread")
	m = regexp.MustCompile(`href="([^"]+)" rel="next" data-testid="notifications-older"`).FindStringSubmatch(page)
	require.NotNil(t, m)
	require.Contains(t, html.UnescapeString(m[1]), "cluster=46")
	require.Contains(t, html.UnescapeString(m[1]), "show=unread")

}
