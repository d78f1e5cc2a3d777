package handlers_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/queries"
)

type notificationsJSON struct {
	Notifications []struct {
		ID     int64   `json:"id"`
		Kind   string  `json:"kind"`
		Title  string  `json:"title"`
		Body   string  `json:"body"`
		Read   bool    `json:"read"`
		ReadAt *string `json:"read_at"`
	} `json:"notifications"`
	Unread int64 `json:"unread"`
}

// TestAPINotifications: the inbox reads a page at a time, newest first,
// worded in the reader's language; some or all are marked read, the
// caller's only, as the console shows.
func TestAPINotifications(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	c, email := b.SignedUpUser(t, "inboxed")
	_, otherEmail := b.SignedUpUser(t, "bystander")
	key := c.CreateScopedKey("inbox", "write")
	id := b.UserID(t, email)
	for _, title := range []string{"Node worker-1 is not ready", "Node worker-1 is ready again"} {
		_, err := b.Pool.Exec(ctx, "INSERT INTO notifications (user_id, kind, title) VALUES ($1, 'node_not_ready', $2)", id, title)
		require.NoError(t, err)
	}
	user, err := queries.New(b.Pool).UserGetByID(ctx, id)
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, b.Pool, func(tx pgx.Tx) error {
		_, err := notify.Notices{Box: b.Box}.Tell(ctx, tx, user, notify.ClusterReady, notify.EmailClusterReady, map[string]any{"Cluster": "demo", "ClusterID": 7})
		return err
	}))
	var theirs int64
	require.NoError(t, b.Pool.QueryRow(ctx, "INSERT INTO notifications (user_id, kind, title) VALUES ($1, 'billing', 'not yours') RETURNING id", b.UserID(t, otherEmail)).Scan(&theirs))

	var all notificationsJSON
	for _, r := range readPages(t, b, key, "/api/v1/notifications?limit=1") {
		p := handlerstest.DecodeAs[notificationsJSON](t, r)
		require.Len(t, p.Notifications, 1)
		require.Equal(t, int64(3), p.Unread)
		all.Notifications = append(all.Notifications, p.Notifications...)
	}
	require.Len(t, all.Notifications, 3)
	newest := all.Notifications[0]
	require.Equal(t, "cluster_ready", newest.Kind)
	require.Equal(t, "Cluster demo is ready", newest.Title, "worded in the reader's language")
	require.Equal(t, "Your cluster demo is ready.", newest.Body)
	require.False(t, newest.Read)
	require.Nil(t, newest.ReadAt)
	require.Equal(t, "Node worker-1 is not ready", all.Notifications[2].Title, "newest first")

	r := b.APICall(t, http.MethodPost, "/api/v1/notifications/read", key, fmt.Sprintf(`{"ids":[%d,%d]}`, newest.ID, theirs))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, `{"marked":1}`, r.Body, "another user's id changes nothing")
	r = b.APICall(t, http.MethodGet, "/api/v1/notifications", key, "")
	got := handlerstest.DecodeAs[notificationsJSON](t, r)
	require.Equal(t, int64(2), got.Unread)
	require.True(t, got.Notifications[0].Read)
	require.NotNil(t, got.Notifications[0].ReadAt)
	require.False(t, got.Notifications[1].Read)
	_, page := c.Get("/")
	require.Contains(t, page, `data-testid="unread-count">2</mark>`, "the console counts the same")
	require.Equal(t, 1, countRows(t, b, "SELECT count(*) FROM notifications WHERE id = $1 AND read_at IS NULL", theirs))

	for _, bad := range []struct {
		body   string
		status int
	}{
		{`{"ids":"all"}`, http.StatusBadRequest},
		{`{"all":true}`, http.StatusBadRequest},
		{`{"ids":[` + strings.TrimSuffix(strings.Repeat("1,", 101), ",") + `]}`, http.StatusUnprocessableEntity},
	} {
		r := b.APICall(t, http.MethodPost, "/api/v1/notifications/read", key, bad.body)
		require.Equal(t, bad.status, r.Status, "%s: %s", bad.body, r.Body)
	}

	// No body: every one, as the console's button.
	r = b.APICall(t, http.MethodPost, "/api/v1/notifications/read", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, `{"marked":2}`, r.Body)
	_, page = c.Get("/")
	require.NotContains(t, page, `data-testid="unread-count"`)
	require.Subset(t, b.Audits(t, id), []string{"notification.read", "notification.read_all"})
	r = b.APICall(t, http.MethodGet, "/api/v1/notifications?limit=0", key, "")
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)
}

// TestAPINotificationSettings: the choices read as the console shows them,
// and change where named only; the admins' own kinds are theirs alone.
func TestAPINotificationSettings(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "chooser")
	key := c.CreateScopedKey("settings", "write")
	const path = "/api/v1/notification-settings"

	r := b.APICall(t, http.MethodGet, path, key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	before := handlerstest.DecodeAs[map[string]map[string]bool](t, r)
	require.Len(t, before, len(notify.KindsFor(false)))
	require.NotContains(t, before, string(notify.PlatformHealth), "the admins' own")
	_, page := c.Get(handlerstest.NotificationsPage)
	for kind, channels := range before {
		for ch, on := range channels {
			require.Equal(t, handlerstest.Checkbox(t, page, notify.Kind(kind), notify.Channel(ch)), on, "%s/%s", kind, ch)
		}
	}

	email0 := before[string(notify.ClusterReady)]["email"]
	r = b.APICall(t, http.MethodPatch, path, key, fmt.Sprintf(`{"cluster_ready":{"email":%t,"webhook":true}}`, !email0))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	after := handlerstest.DecodeAs[map[string]map[string]bool](t, r)
	want := before
	want[string(notify.ClusterReady)]["email"], want[string(notify.ClusterReady)]["webhook"] = !email0, true
	require.Equal(t, want, after, "the rest is kept")
	_, page = c.Get(handlerstest.NotificationsPage)
	require.Equal(t, !email0, handlerstest.Checkbox(t, page, notify.ClusterReady, notify.Email))
	require.True(t, handlerstest.Checkbox(t, page, notify.ClusterReady, notify.Webhook))
	require.Contains(t, b.Audits(t, b.UserID(t, email)), "user.update_notifications")

	requireInvalid(t, b.APICall(t, http.MethodPatch, path, key, `{"platform_health":{"email":true}}`), "platform_health")
	requireInvalid(t, b.APICall(t, http.MethodPatch, path, key, `{"no_such_kind":{"email":true}}`), "no_such_kind")
	requireInvalid(t, b.APICall(t, http.MethodPatch, path, key, `{"billing":{"pager":true}}`), "billing")
	r = b.APICall(t, http.MethodPatch, path, key, `{"billing":{"email":"yes"}}`)
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)
	r = b.APICall(t, http.MethodGet, path, key, "")
	require.Equal(t, after, handlerstest.DecodeAs[map[string]map[string]bool](t, r), "refusals change nothing")

	admin, _ := b.SignedUpAdmin(t, "chooser-admin")
	adminKey := admin.CreateScopedKey("settings", "write")
	r = b.APICall(t, http.MethodPatch, path, adminKey, `{"platform_health":{"webhook":false}}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.False(t, handlerstest.DecodeAs[map[string]map[string]bool](t, r)[string(notify.PlatformHealth)]["webhook"])
}

type webhookJSON struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Host       string `json:"host"`
	SecretSet  bool   `json:"secret_set"`
	Secret     string `json:"secret"`
	Deliveries []struct {
		EventKind    string `json:"event_kind"`
		Status       string `json:"status"`
		ResponseCode int    `json:"response_code"`
	} `json:"deliveries"`
}

// TestAPIWebhooks: a user adds channels (a generic webhook's secret shown
// once), lists them a page at a time, sends a signed test the receiver
// verifies, reads the log, and deletes one; as from the console, and
// audited.
func TestAPIWebhooks(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "api-hooked")
	admin, _ := b.SignedUpAdmin(t, "api-hook-admin")
	key := c.CreateScopedKey("hooks", "write")
	srv, got := handlerstest.HookServer(t, "")
	resp := admin.Post("/admin/notifications", "/admin/notifications/network", url.Values{"allowedCIDRs": {"127.0.0.1/32"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	requireInvalid(t, b.APICall(t, http.MethodPost, "/api/v1/webhooks", key, `{"name":"","kind":"teams","url":"ftp://example.com"}`), "name", "kind", "url")
	requireInvalid(t, b.APICall(t, http.MethodPost, "/api/v1/webhooks", key, `{"name":"meta","kind":"generic","url":"http://169.254.169.254/"}`), "url")
	r := b.APICall(t, http.MethodPost, "/api/v1/webhooks", key, `{"name":"ops","kind":"generic","url":"`+srv.URL+`/hook"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	created := handlerstest.DecodeAs[webhookJSON](t, r)
	require.True(t, strings.HasPrefix(created.Secret, "whsec_"), "the secret, this once")
	require.True(t, created.SecretSet)
	require.Equal(t, strings.TrimPrefix(srv.URL, "http://"), created.Host)
	require.Equal(t, fmt.Sprintf("/api/v1/webhooks/%d", created.ID), r.Header.Get("Location"))
	for _, kind := range []string{"slack", "feishu"} {
		r = b.APICall(t, http.MethodPost, "/api/v1/webhooks", key, `{"name":"`+kind+`","kind":"`+kind+`","url":"https://hooks.example.com/`+kind+`","secret":"SIGNME"}`)
		require.Equal(t, http.StatusCreated, r.Status, r.Body)
		h := handlerstest.DecodeAs[webhookJSON](t, r)
		require.Empty(t, h.Secret, "a secret the user gave is not answered")
		require.Equal(t, kind == "feishu", h.SecretSet)
	}

	var names []string
	for _, r := range readPages(t, b, key, "/api/v1/webhooks?limit=2") {
		require.NotContains(t, r.Body, created.Secret)
		require.NotContains(t, r.Body, "/hook", "never the URL")
		for _, h := range handlerstest.DecodeAs[struct {
			Webhooks []webhookJSON `json:"webhooks"`
		}](t, r).Webhooks {
			names = append(names, h.Name)
		}
	}
	require.Equal(t, []string{"feishu", "slack", "ops"}, names, "newest first")

	one := fmt.Sprintf("/api/v1/webhooks/%d", created.ID)
	r = b.APICall(t, http.MethodPost, one+"/test", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, `{"delivered":true,"response_code":200}`, r.Body)
	req := <-got
	m := hmac.New(sha256.New, []byte(created.Secret))
	m.Write([]byte(req.Header.Get("X-KubeBYON-Timestamp") + "."))
	m.Write(req.Body)
	require.Equal(t, "sha256="+hex.EncodeToString(m.Sum(nil)), req.Header.Get("X-KubeBYON-Signature"))
	r = b.APICall(t, http.MethodGet, one, key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	shown := handlerstest.DecodeAs[webhookJSON](t, r)
	require.Empty(t, shown.Secret)
	require.Len(t, shown.Deliveries, 1)
	require.Equal(t, "test", shown.Deliveries[0].EventKind)
	require.Equal(t, "delivered", shown.Deliveries[0].Status)
	_, page := c.Get(handlerstest.NotificationsPage)
	require.Contains(t, page, `data-testid="webhook-log-row" data-status="delivered"`, "the console shows the API's test")

	// Tests share the console's limit: ten a minute.
	for range 10 - 1 {
		r = b.APICall(t, http.MethodPost, one+"/test", key, "")
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		<-got
	}
	r = b.APICall(t, http.MethodPost, one+"/test", key, "")
	require.Equal(t, http.StatusTooManyRequests, r.Status, r.Body)
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	resp, frag := c.PostHTMX(handlerstest.NotificationsPage, fmt.Sprintf("/settings/notifications/webhooks/%d/test", created.ID), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, frag, "Too many test messages")

	r = b.APICall(t, http.MethodDelete, one, key, "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		r = b.APICall(t, method, one, key, "")
		require.Equal(t, http.StatusNotFound, r.Status, method)
	}
	r = b.APICall(t, http.MethodGet, "/api/v1/webhooks/x", key, "")
	require.Equal(t, http.StatusNotFound, r.Status)
	require.Equal(t, 3, countRows(t, b, "SELECT count(*) FROM audit_events WHERE action = 'webhook.create' AND actor_email = $1", email))
	require.Equal(t, 10, countRows(t, b, "SELECT count(*) FROM audit_events WHERE action = 'webhook.test' AND actor_email = $1", email))
	require.Equal(t, 1, countRows(t, b, "SELECT count(*) FROM audit_events WHERE action = 'webhook.delete' AND actor_email = $1", email))
	require.Zero(t, countRows(t, b, "SELECT count(*) FROM audit_events WHERE details::text LIKE '%' || $1 || '%'", created.Secret))
}
