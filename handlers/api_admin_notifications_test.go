package handlers_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/mailsettings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/webhooks"
)

type apiMailJSON struct {
	Host            string `json:"host"`
	Port            int    `json:"port"`
	TLS             string `json:"tls"`
	Username        string `json:"username"`
	From            string `json:"from"`
	SMTPPasswordSet bool   `json:"smtp_password_set"`
	Source          string `json:"source"`
	Server          string `json:"server"`
}

type apiMailTestJSON struct {
	Sent   bool   `json:"sent"`
	To     string `json:"to"`
	Source string `json:"source"`
	Server string `json:"server"`
	Error  string `json:"error"`
}

// TestAPIAdminMail: the mail server settings change with an admin key and
// no password; the SMTP password is never answered nor audited, and kept
// when a change leaves it out; a test email goes through the server the
// fields would name, saved or not.
func TestAPIAdminMail(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	a := newAdminAPI(t, b, "postmaster")
	auth := testenv.MailAuth(t)
	u, err := url.Parse(auth.SMTPURL)
	require.NoError(t, err)
	server := net.JoinHostPort(u.Hostname(), u.Port())

	st := get[apiMailJSON](t, a, "/settings/mail")
	require.Equal(t, apiMailJSON{TLS: "starttls", Source: "env", Server: st.Server}, st)
	require.NotEmpty(t, st.Server, "KUBEBYON_SMTP_URL's")

	// A test email through a server not saved, to the admin by default.
	body := fmt.Sprintf(`{"host": %q, "port": %s, "tls": "none", "username": %q, "smtp_password": %q}`, u.Hostname(), u.Port(), auth.Username, auth.Password)
	test := handlerstest.DecodeAs[apiMailTestJSON](t, a.call(t, http.MethodPost, "/settings/mail/test", body, http.StatusOK, auth.Password))
	require.Equal(t, apiMailTestJSON{Sent: true, To: a.email, Source: "settings", Server: server}, test)
	require.Contains(t, auth.WaitMessages(t, a.email, 1)[0].Subject, "test email")
	require.Equal(t, "", b.MailRow(t), "a test saves nothing")
	wrong := strings.Replace(body, `"smtp_password": "`+auth.Password, `"smtp_password": "wrong`, 1)
	test = handlerstest.DecodeAs[apiMailTestJSON](t, a.call(t, http.MethodPost, "/settings/mail/test", `{"to": "someone@mail.test", `+wrong[1:], http.StatusOK))
	require.False(t, test.Sent)
	require.Contains(t, test.Error, "refused the user name and password")
	a.requireInvalid(t, http.MethodPost, "/settings/mail/test", `{"to": "nobody"}`, "to")

	// Saved.
	st = patchAs[apiMailJSON](t, a, "/settings/mail", strings.Replace(body, "}", `, "from": "Platform Mail <platform@mail.test>"}`, 1), auth.Password)
	require.Equal(t, apiMailJSON{
		Host: u.Hostname(), Port: st.Port, TLS: "none", Username: auth.Username, From: "Platform Mail <platform@mail.test>",
		SMTPPasswordSet: true, Source: "settings", Server: server,
	}, st)
	require.Equal(t, u.Port(), fmt.Sprint(st.Port))
	require.Equal(t, st, get[apiMailJSON](t, a, "/settings/mail", auth.Password))
	require.NotContains(t, b.MailRow(t), auth.Password, "sealed")
	raw, events := b.MailEvents(t, mailsettings.ActionUpdate)
	require.Len(t, events, 1)
	require.Equal(t, "replaced", events[0]["smtpPassword"])
	require.NotContains(t, raw[0], auth.Password)
	_, page := a.admin.Get("/admin/mail")
	require.Contains(t, page, "A password is stored")

	// Left out, the password is kept: the stored server still takes mail.
	st = patchAs[apiMailJSON](t, a, "/settings/mail", `{"from": "Other <other@mail.test>"}`, auth.Password)
	require.True(t, st.SMTPPasswordSet)
	test = handlerstest.DecodeAs[apiMailTestJSON](t, a.call(t, http.MethodPost, "/settings/mail/test", `{"to": "second@mail.test"}`, http.StatusOK))
	require.True(t, test.Sent, test.Error)
	auth.WaitMessages(t, "second@mail.test", 1)

	for _, tt := range []struct {
		body   string
		fields []string
	}{
		{`{"port": 70000}`, []string{"port"}},
		{`{"tls": "ssl", "from": "not an address"}`, []string{"tls", "from"}},
		{`{"username": "", "smtp_password": "p"}`, []string{"username"}},
		{`{"host": "", "smtp_password": "p"}`, []string{"host"}},
	} {
		a.requireInvalid(t, http.MethodPatch, "/settings/mail", tt.body, tt.fields...)
	}
	require.Equal(t, st, get[apiMailJSON](t, a, "/settings/mail"))

	// Every field empty clears the settings: KUBEBYON_SMTP_URL is back.
	st = patchAs[apiMailJSON](t, a, "/settings/mail", `{"host": "", "port": 0, "username": "", "from": "", "smtp_password": ""}`)
	require.Equal(t, "env", st.Source)
	require.False(t, st.SMTPPasswordSet)
	require.Equal(t, 3, a.audited(t, mailsettings.ActionUpdate))
	require.Equal(t, 3, a.audited(t, mailsettings.ActionTest))
}

type apiChannelJSON struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Host   string `json:"host"`
	Signed bool   `json:"secret_set"`
	Secret string `json:"secret"`
	Log    []struct {
		Status     string `json:"status"`
		StatusCode int    `json:"response_code"`
		EventKind  string `json:"event_kind"`
	} `json:"deliveries"`
}

// TestAPIAdminNotificationChannels: the platform's channels are added,
// listed a page at a time, tested, read with their log and deleted with
// an admin key; a URL on an internal network is refused until the webhook
// network settings allow it; a user's channel is not the platform's.
func TestAPIAdminNotificationChannels(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	a := newAdminAPI(t, b, "alerts")
	srv, got := handlerstest.HookServer(t, `{"errcode":0,"errmsg":"ok"}`)
	wecom := fmt.Sprintf(`{"name": "on-call", "kind": "wecom", "url": "%s/cgi-bin/webhook/send?key=SECRETKEY"}`, srv.URL)

	type network struct {
		AllowedCIDRs []string `json:"allowed_cidrs"`
	}
	require.Equal(t, network{AllowedCIDRs: []string{}}, get[network](t, a, "/settings/webhook-network"))
	a.requireInvalid(t, http.MethodPost, "/notification-channels", wecom, "url")
	a.requireInvalid(t, http.MethodPatch, "/settings/webhook-network", `{"allowed_cidrs": ["127.0.0.1/32", "not-a-network"]}`, "allowed_cidrs")
	require.Equal(t, network{AllowedCIDRs: []string{"127.0.0.1/32"}},
		patchAs[network](t, a, "/settings/webhook-network", `{"allowed_cidrs": ["127.0.0.1", "127.0.0.1/32"]}`))
	require.Equal(t, network{AllowedCIDRs: []string{"127.0.0.1/32"}}, get[network](t, a, "/settings/webhook-network"))

	r := a.call(t, http.MethodPost, "/notification-channels", wecom, http.StatusCreated, "SECRETKEY")
	ch := handlerstest.DecodeAs[apiChannelJSON](t, r)
	require.Equal(t, "on-call", ch.Name)
	require.Equal(t, "wecom", ch.Kind)
	require.Equal(t, strings.TrimPrefix(srv.URL, "http://"), ch.Host)
	require.Empty(t, ch.Secret)
	require.Equal(t, fmt.Sprintf("/api/v1/admin/notification-channels/%d", ch.ID), r.Header.Get("Location"))
	generic := handlerstest.DecodeAs[apiChannelJSON](t, a.call(t, http.MethodPost, "/notification-channels",
		`{"name": "pager", "kind": "generic", "url": "`+srv.URL+`/hook"}`, http.StatusCreated))
	require.True(t, strings.HasPrefix(generic.Secret, "whsec_"), "a generic webhook's secret, once")
	require.True(t, generic.Signed)
	require.NotContains(t, a.call(t, http.MethodGet, fmt.Sprintf("/notification-channels/%d", generic.ID), "", http.StatusOK).Body, generic.Secret)
	a.requireInvalid(t, http.MethodPost, "/notification-channels", `{"name": " ", "kind": "email", "url": "ftp://x"}`, "name", "kind", "url")

	// A page at a time, newest first.
	var names []string
	next := ""
	for range 2 {
		page := handlerstest.DecodeAs[struct {
			Channels []apiChannelJSON `json:"channels"`
			Next     string           `json:"next"`
		}](t, a.call(t, http.MethodGet, "/notification-channels?limit=1"+next, "", http.StatusOK, "SECRETKEY", generic.Secret))
		require.Len(t, page.Channels, 1)
		names = append(names, page.Channels[0].Name)
		next = "&cursor=" + page.Next
	}
	require.Equal(t, []string{"pager", "on-call"}, names)
	require.Equal(t, "&cursor=", next, "the last page has no next")

	// A test, delivered and logged.
	test := a.call(t, http.MethodPost, fmt.Sprintf("/notification-channels/%d/test", ch.ID), "", http.StatusOK)
	require.JSONEq(t, `{"delivered": true, "response_code": 200}`, test.Body)
	var payload map[string]any
	require.NoError(t, json.Unmarshal((<-got).Body, &payload))
	require.Equal(t, "text", payload["msgtype"])
	one := get[apiChannelJSON](t, a, fmt.Sprintf("/notification-channels/%d", ch.ID), "SECRETKEY")
	require.Len(t, one.Log, 1)
	require.Equal(t, webhooks.StatusDelivered, one.Log[0].Status)
	require.Equal(t, webhooks.TestKind, one.Log[0].EventKind)
	_, page := a.admin.Get("/admin/notifications")
	require.Contains(t, page, "on-call")

	// A user's channel is not the platform's.
	user, _ := b.SignedUpUser(t, "hooked")
	resp := user.Post(handlerstest.NotificationsPage, "/settings/notifications/webhooks", url.Values{"name": {"mine"}, "kind": {webhooks.Slack}, "url": {"https://hooks.slack.com/services/T0/B0/X"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, userPage := user.Get(handlerstest.NotificationsPage)
	uid := webhookIDs.FindStringSubmatch(userPage)[1]
	a.call(t, http.MethodGet, "/notification-channels/"+uid, "", http.StatusNotFound)
	a.call(t, http.MethodPost, "/notification-channels/"+uid+"/test", "", http.StatusNotFound)
	a.call(t, http.MethodDelete, "/notification-channels/"+uid, "", http.StatusNotFound)
	require.Equal(t, 1, countRows(t, b, "SELECT count(*) FROM webhook_channels WHERE user_id IS NOT NULL"))

	a.call(t, http.MethodDelete, fmt.Sprintf("/notification-channels/%d", ch.ID), "", http.StatusNoContent)
	a.call(t, http.MethodGet, fmt.Sprintf("/notification-channels/%d", ch.ID), "", http.StatusNotFound)
	a.call(t, http.MethodDelete, fmt.Sprintf("/notification-channels/%d", ch.ID), "", http.StatusNotFound)
	for action, n := range map[string]int{
		webhooks.ActionNetworkUpdate: 1, webhooks.ActionPlatformCreate: 2, webhooks.ActionPlatformTest: 1, webhooks.ActionPlatformDelete: 1,
	} {
		require.Equal(t, n, a.audited(t, action), action)
	}
	require.Zero(t, countRows(t, b, "SELECT count(*) FROM audit_events WHERE details::text LIKE '%SECRETKEY%'"))
}

// TestAPIAdminChannelTestLimited: test messages count against the admin's
// budget, the console's and the API's together: 429 with Retry-After
// beyond it, and nothing is sent.
func TestAPIAdminChannelTestLimited(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	a := newAdminAPI(t, b, "tester")
	ch := handlerstest.DecodeAs[apiChannelJSON](t, a.call(t, http.MethodPost, "/notification-channels",
		`{"name": "nowhere", "kind": "slack", "url": "https://no-such-host.invalid/hook"}`, http.StatusCreated))
	testPath := fmt.Sprintf("/notification-channels/%d/test", ch.ID)
	resp, _ := a.admin.PostHTMX("/admin/notifications", "/admin/notifications/channels/"+fmt.Sprint(ch.ID)+"/test", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for range 10 - 1 { // the limit: 10 a minute
		r := a.call(t, http.MethodPost, testPath, "", http.StatusOK)
		require.Contains(t, r.Body, `"delivered":false`)
	}
	r := a.call(t, http.MethodPost, testPath, "", http.StatusTooManyRequests)
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Contains(t, r.Body, "Too many test messages")
	require.Equal(t, 10, a.audited(t, webhooks.ActionPlatformTest), "the refused test sent nothing")
}
