package handlers_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/webhooks"
)

// countRows runs a count query.
func countRows(t *testing.T, b *handlerstest.Bundle, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

var webhookIDs = regexp.MustCompile(`data-testid="webhook-(\d+)"`)

// TestUserWebhooks: a user adds a generic webhook (refused on loopback
// until an admin allows it), reads its secret once, sends a test the
// receiver verifies, sees the log; another user sees none of it.
func TestUserWebhooks(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "hooked")
	admin, _ := b.SignedUpAdmin(t, "hook-admin")
	srv, got := handlerstest.HookServer(t, "")

	code, page := c.Get(handlerstest.NotificationsPage)
	require.Equal(t, http.StatusOK, code)
	require.True(t, handlerstest.Checkbox(t, page, notify.ClusterFailed, notify.Webhook), "failures go to webhooks by default")
	require.False(t, handlerstest.Checkbox(t, page, notify.ClusterReady, notify.Webhook))
	require.Contains(t, page, `data-testid="webhooks-none"`)

	add := url.Values{"name": {"ops"}, "kind": {webhooks.Generic}, "url": {srv.URL + "/hook"}}
	resp := c.Post(handlerstest.NotificationsPage, "/settings/notifications/webhooks", add)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	body := handlerstest.ReadBody(t, resp)
	require.Contains(t, body, `data-testid="error-url"`)
	require.Contains(t, body, "webhooks may not reach it")
	require.Contains(t, body, `value="`+srv.URL+`/hook"`, "what was typed is kept")

	bad := url.Values{"name": {""}, "kind": {"teams"}, "url": {"ftp://example.com"}}
	resp = c.Post(handlerstest.NotificationsPage, "/settings/notifications/webhooks", bad)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	body = handlerstest.ReadBody(t, resp)
	for _, f := range []string{"name", "kind", "url"} {
		require.Contains(t, body, `data-testid="error-`+f+`"`)
	}

	resp = admin.Post("/admin/notifications", "/admin/notifications/network", url.Values{"allowedCIDRs": {"127.0.0.1/32"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	resp = c.Post(handlerstest.NotificationsPage, "/settings/notifications/webhooks", add)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	body = handlerstest.ReadBody(t, resp)
	secret := regexp.MustCompile(`data-testid="webhook-secret-value">(whsec_[A-Z0-9]+)<`).FindStringSubmatch(body)
	require.NotNil(t, secret, "the secret is shown once")
	ids := webhookIDs.FindStringSubmatch(body)
	require.NotNil(t, ids)
	id := ids[1]
	_, page = c.Get(handlerstest.NotificationsPage)
	require.NotContains(t, page, secret[1], "and never again")
	require.NotContains(t, page, srv.URL+"/hook", "nor the URL")
	require.Contains(t, page, `data-testid="webhook-host">`+strings.TrimPrefix(srv.URL, "http://")+`<`)

	resp, frag := c.PostHTMX(handlerstest.NotificationsPage, "/settings/notifications/webhooks/"+id+"/test", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, frag, `data-testid="webhook-test-delivered"`)
	require.NotContains(t, frag, "<html")
	r := <-got
	ts := r.Header.Get("X-KubeBYON-Timestamp")
	m := hmac.New(sha256.New, []byte(secret[1]))
	m.Write([]byte(ts + "."))
	m.Write(r.Body)
	require.Equal(t, "sha256="+hex.EncodeToString(m.Sum(nil)), r.Header.Get("X-KubeBYON-Signature"))
	var payload map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &payload))
	require.Equal(t, "test", payload["kind"])
	require.Contains(t, payload["body"], "ops")

	// Without JavaScript, the page shows the result.
	resp = c.Post(handlerstest.NotificationsPage, "/settings/notifications/webhooks/"+id+"/test", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="webhook-test-delivered"`)
	<-got

	_, page = c.Get(handlerstest.NotificationsPage)
	require.Equal(t, 2, strings.Count(page, `data-testid="webhook-log-row" data-status="delivered"`))
	require.Equal(t, 1, countRows(t, b, "SELECT count(*) FROM audit_events WHERE action = 'webhook.create' AND actor_email = $1", email))
	require.Equal(t, 2, countRows(t, b, "SELECT count(*) FROM audit_events WHERE action = 'webhook.test' AND actor_email = $1", email))
	require.Zero(t, countRows(t, b, "SELECT count(*) FROM audit_events WHERE details::text LIKE '%' || $1 || '%'", secret[1]))

	// Another user sees none of it and cannot act on it.
	other, _ := b.SignedUpUser(t, "other-hooked")
	_, page = other.Get(handlerstest.NotificationsPage)
	require.NotContains(t, page, `data-testid="webhook-`+id+`"`)
	require.NotContains(t, page, "ops")
	for _, verb := range []string{"test", "delete"} {
		resp = other.Post(handlerstest.NotificationsPage, "/settings/notifications/webhooks/"+id+"/"+verb, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, verb)
	}
	require.Len(t, got, 0, "another user's test sent nothing")

	resp = c.Post(handlerstest.NotificationsPage, "/settings/notifications/webhooks/"+id+"/delete", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page = c.Get(handlerstest.NotificationsPage)
	require.Contains(t, page, `data-testid="webhooks-none"`)
	require.Equal(t, 1, countRows(t, b, "SELECT count(*) FROM audit_events WHERE action = 'webhook.delete' AND actor_email = $1", email))
}

// TestAdminWebhooks: the operator alerts' channels, the networks and the
// log of every channel are the admins'; each change is audited.
func TestAdminWebhooks(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, adminEmail := b.SignedUpAdmin(t, "alerts-admin")
	user, _ := b.SignedUpUser(t, "not-an-admin")
	srv, got := handlerstest.HookServer(t, `{"errcode":0,"errmsg":"ok"}`)

	// Non-admins get the 404 of an unknown path, for every route.
	code, _ := user.Get("/admin/notifications")
	require.Equal(t, http.StatusNotFound, code)
	for _, path := range []string{"/admin/notifications/channels", "/admin/notifications/channels/1/test", "/admin/notifications/channels/1/delete", "/admin/notifications/network"} {
		resp := user.Post(handlerstest.NotificationsPage, path, url.Values{"allowedCIDRs": {"0.0.0.0/0"}, "name": {"x"}, "kind": {"slack"}, "url": {"https://example.com"}})
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}
	require.Zero(t, countRows(t, b, "SELECT count(*) FROM audit_events WHERE action LIKE 'admin.webhook%'"))
	require.Zero(t, countRows(t, b, "SELECT count(*) FROM settings WHERE key = 'webhooks'"))

	code, page := admin.Get("/admin/notifications")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, `data-testid="admin-nav-notifications"`)

	resp := admin.Post("/admin/notifications", "/admin/notifications/network", url.Values{"allowedCIDRs": {"127.0.0.1/32\nnot-a-network"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	body := handlerstest.ReadBody(t, resp)
	require.Contains(t, body, `data-testid="error-allowedCIDRs"`)
	require.Contains(t, body, "not-a-network", "what was typed is kept")

	add := url.Values{"name": {"on-call"}, "kind": {webhooks.WeCom}, "url": {srv.URL + "/cgi-bin/webhook/send?key=SECRETKEY"}}
	resp = admin.Post("/admin/notifications", "/admin/notifications/channels", add)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "loopback is refused until allowed")

	resp = admin.Post("/admin/notifications", "/admin/notifications/network", url.Values{"allowedCIDRs": {"127.0.0.1/32"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp = admin.Post("/admin/notifications", "/admin/notifications/channels", add)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page = admin.Get("/admin/notifications")
	ids := webhookIDs.FindStringSubmatch(page)
	require.NotNil(t, ids)
	id := ids[1]
	require.NotContains(t, page, "SECRETKEY")

	resp, frag := admin.PostHTMX("/admin/notifications", "/admin/notifications/channels/"+id+"/test", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, frag, `data-testid="webhook-test-delivered"`)
	r := <-got
	var payload map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &payload))
	require.Equal(t, "text", payload["msgtype"])

	// The admins see every channel's log, a user's included.
	user2, user2Email := b.SignedUpUser(t, "logged-user")
	resp = user2.Post(handlerstest.NotificationsPage, "/settings/notifications/webhooks", url.Values{"name": {"mine"}, "kind": {webhooks.Slack}, "url": {srv.URL + "/slack"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page = user2.Get(handlerstest.NotificationsPage)
	uid := webhookIDs.FindStringSubmatch(page)[1]
	resp, _ = user2.PostHTMX(handlerstest.NotificationsPage, "/settings/notifications/webhooks/"+uid+"/test", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	<-got
	_, page = admin.Get("/admin/notifications")
	// The platform channel's own log (one test), then every channel's (two).
	require.Equal(t, 3, strings.Count(page, `data-testid="webhook-log-row"`))
	require.Contains(t, page, "<td>mine</td>")
	require.Contains(t, page, user2Email)
	// A user's channel is not the platform's to delete.
	resp = admin.Post("/admin/notifications", "/admin/notifications/channels/"+uid+"/delete", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp = admin.Post("/admin/notifications", "/admin/notifications/channels/"+id+"/delete", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	for _, action := range []string{webhooks.ActionNetworkUpdate, webhooks.ActionPlatformCreate, webhooks.ActionPlatformTest, webhooks.ActionPlatformDelete} {
		require.Positive(t, countRows(t, b, "SELECT count(*) FROM audit_events WHERE action = $1 AND actor_email = $2", action, adminEmail), action)
	}
	require.Zero(t, countRows(t, b, "SELECT count(*) FROM audit_events WHERE details::text LIKE '%SECRETKEY%'"))
	require.Zero(t, countRows(t, b, "SELECT count(*) FROM webhook_channels WHERE user_id IS NULL"))
}

// TestWebhookTestLimited: "Send test" sends at most a few messages a
// minute per person (each is a request from the platform), and a test
// whose host does not resolve says so without the platform's resolver.
func TestWebhookTestLimited(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "hook-tester")
	add := url.Values{"name": {"nowhere"}, "kind": {webhooks.Generic}, "url": {"https://no-such-host.invalid/hook"}}
	resp := c.Post(handlerstest.NotificationsPage, "/settings/notifications/webhooks", add)
	body := handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	ids := webhookIDs.FindStringSubmatch(body)
	require.NotNil(t, ids)
	test := "/settings/notifications/webhooks/" + ids[1] + "/test"

	resp, frag := c.PostHTMX(handlerstest.NotificationsPage, test, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, frag, "no-such-host.invalid")
	require.NotRegexp(t, `on \[?[0-9a-f.:]+\]?:53`, frag, "the platform's resolver is not shown")
	for range 10 - 1 { // the limit: 10 a minute
		resp, _ = c.PostHTMX(handlerstest.NotificationsPage, test, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	resp, frag = c.PostHTMX(handlerstest.NotificationsPage, test, nil)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Contains(t, frag, "Too many test messages")
	require.Equal(t, 10, countRows(t, b, "SELECT count(*) FROM audit_events WHERE action = 'webhook.test'"), "the refused test sent nothing")
}

// TestOrgWebhooks: the webhook channels are the organization's, in the API
// and in the console: its owners and admins add them; its members and
// viewers see them but change nothing (403, and no form); a user of
// another organization sees none (404).
func TestOrgWebhooks(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tm := newOrgTeam(t, b, "hooks")
	add := func(name string) string {
		return `{"name":"` + name + `","kind":"slack","url":"https://hooks.slack.com/services/` + name + `"}`
	}
	r := b.APICall(t, http.MethodPost, "/api/v1/webhooks", tm.keys["owner"], add("by-owner"))
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	id := handlerstest.DecodeAs[webhookJSON](t, r).ID
	one := fmt.Sprintf("/api/v1/webhooks/%d", id)
	resp := tm.clients["admin"].Post(handlerstest.NotificationsPage, "/settings/notifications/webhooks",
		url.Values{"name": {"by-admin"}, "kind": {webhooks.Slack}, "url": {"https://hooks.slack.com/services/by-admin"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	for _, role := range []string{"member", "viewer"} {
		r := b.APICall(t, http.MethodPost, "/api/v1/webhooks", tm.keys[role], add("by-"+role))
		require.Equal(t, http.StatusForbidden, r.Status, role)
		for _, call := range []struct{ method, path string }{{http.MethodPost, one + "/test"}, {http.MethodDelete, one}} {
			r := b.APICall(t, call.method, call.path, tm.keys[role], "")
			require.Equal(t, http.StatusForbidden, r.Status, "%s %s as %s", call.method, call.path, role)
		}
		c := tm.clients[role]
		resp := c.Post(handlerstest.NotificationsPage, "/settings/notifications/webhooks",
			url.Values{"name": {"by-" + role}, "kind": {webhooks.Slack}, "url": {"https://hooks.slack.com/services/x"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode, role)
		resp = c.Post(handlerstest.NotificationsPage, fmt.Sprintf("/settings/notifications/webhooks/%d/delete", id), nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, role)

		r = b.APICall(t, http.MethodGet, "/api/v1/webhooks", tm.keys[role], "")
		require.Equal(t, http.StatusOK, r.Status, role)
		require.Contains(t, r.Body, "by-owner", role)
		require.Contains(t, r.Body, "by-admin", role)
		_, page := c.Get(handlerstest.NotificationsPage)
		require.Contains(t, page, "by-owner", role)
		require.Contains(t, page, `data-testid="webhooks-managed-by"`, role)
		require.NotContains(t, page, `data-testid="webhook-form"`, role)
		require.NotContains(t, page, `data-testid="webhook-delete"`, role)
	}

	r = b.APICall(t, http.MethodGet, one, tm.keys["other"], "")
	require.Equal(t, http.StatusNotFound, r.Status)
	r = b.APICall(t, http.MethodDelete, one, tm.keys["other"], "")
	require.Equal(t, http.StatusNotFound, r.Status)
	r = b.APICall(t, http.MethodGet, "/api/v1/webhooks", tm.keys["other"], "")
	require.Equal(t, http.StatusOK, r.Status)
	require.NotContains(t, r.Body, "by-owner")
	_, page := tm.clients["other"].Get(handlerstest.NotificationsPage)
	require.NotContains(t, page, "by-owner")

	r = b.APICall(t, http.MethodDelete, one, tm.keys["admin"], "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	require.Equal(t, 1, countRows(t, b, "SELECT count(*) FROM webhook_channels WHERE org_id = $1", tm.orgID))
}
