package webhooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/webhooks"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type bundle struct {
	svc *webhooks.Service
	box *secrets.Box
	rc  *river.Client[pgx.Tx]
}

func setup(t *testing.T) *bundle {
	t.Helper()
	pool := testenv.DB(t)
	box, err := secrets.New(bytes.Repeat([]byte{5}, 32))
	require.NoError(t, err)
	catalog, err := locale.New()
	require.NoError(t, err)
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	return &bundle{
		svc: &webhooks.Service{Pool: pool, Box: box, Catalog: catalog, BaseURL: "https://kubebyon.example.com"},
		box: box, rc: rc,
	}
}

func (b *bundle) user(t *testing.T, email, role string) (queries.User, audit.Actor) {
	t.Helper()
	u, err := queries.New(b.svc.Pool).UserCreate(context.Background(), queries.UserCreateParams{Email: email, Name: email, Role: role})
	require.NoError(t, err)
	return u, audit.Actor{UserID: u.ID, Email: u.Email}
}

// allowLoopback is what the tests' admin sets so that webhooks reach the
// test servers on 127.0.0.1.
func (b *bundle) allowLoopback(t *testing.T) {
	t.Helper()
	_, admin := b.user(t, "net-admin@example.com", "admin")
	_, err := b.svc.SaveNetwork(context.Background(), "127.0.0.1/32", admin)
	require.NoError(t, err)
}

// personal is userID acting in their personal organization.
func (b *bundle) personal(t *testing.T, userID int64) orgs.Acting {
	t.Helper()
	a, err := orgs.PersonalActing(context.Background(), b.svc.Pool, userID)
	require.NoError(t, err)
	return a
}

func (b *bundle) log(t *testing.T, who orgs.Acting, id int64) []webhooks.Attempt {
	t.Helper()
	log, err := b.svc.Log(context.Background(), who, id)
	require.NoError(t, err)
	return log
}

// TestDeliver: each attempt is logged; a 500 is retried until the last
// attempt, a 4xx is not, a success ends it; a channel removed since ends
// it quietly.
func TestDeliver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.allowLoopback(t)
	u, a := b.user(t, "deliver@example.com", "user")
	var code atomic.Int32
	var bodies atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		bodies.Store(string(raw))
		w.WriteHeader(int(code.Load()))
	}))
	t.Cleanup(srv.Close)
	ch, err := b.svc.Create(ctx, b.personal(t, u.ID), "en", webhooks.Input{Name: "ops", Kind: webhooks.Generic, URL: srv.URL + "/hook"}, a)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(ch.Secret, "whsec_"), "a generic webhook's secret is made and shown once")

	args := notify.WebhookArgs{
		ChannelID: ch.Channel.ID, EventID: "evt_x", EventKind: string(notify.ClusterFailed), Template: notify.EmailClusterFailed,
		Lang: "en", Time: time.Now(), Sealed: b.box.Seal([]byte(`{"Cluster":"demo","ClusterID":42,"Error":"boom"}`)),
	}
	code.Store(http.StatusInternalServerError)
	err = b.svc.Deliver(ctx, args, 1, 8)
	require.ErrorContains(t, err, "HTTP 500")
	var cancel *rivertype.JobCancelError
	require.NotErrorAs(t, err, &cancel, "a 500 is retried")
	require.Contains(t, bodies.Load(), `"cluster":{"id":42,"name":"demo"}`)
	require.Contains(t, bodies.Load(), `"url":"https://kubebyon.example.com/clusters/42"`)

	err = b.svc.Deliver(ctx, args, 8, 8)
	require.ErrorContains(t, err, "HTTP 500")
	code.Store(http.StatusBadRequest)
	err = b.svc.Deliver(ctx, args, 2, 8)
	require.ErrorAs(t, err, &cancel, "a 400 is not retried")
	code.Store(http.StatusOK)
	require.NoError(t, b.svc.Deliver(ctx, args, 3, 8))

	log := b.log(t, b.personal(t, u.ID), ch.Channel.ID)
	require.Len(t, log, 4)
	type line struct {
		attempt int32
		status  string
		code    int32
	}
	var got []line
	for _, l := range log {
		got = append(got, line{l.Attempt, l.Status, l.ResponseCode})
		require.Equal(t, "evt_x", l.EventID)
		require.Equal(t, "cluster_failed", l.EventKind)
	}
	require.Equal(t, []line{
		{3, webhooks.StatusDelivered, 200}, {2, webhooks.StatusFailed, 400},
		{8, webhooks.StatusFailed, 500}, {1, webhooks.StatusRetrying, 500},
	}, got)

	require.NoError(t, b.svc.Delete(ctx, b.personal(t, u.ID), ch.Channel.ID, a))
	require.NoError(t, b.svc.Deliver(ctx, args, 4, 8), "a removed channel ends its deliveries")
}

// TestDeliverRefusedWithoutAllowList: the same test server, with no
// network allowed, is refused and not retried.
func TestDeliverRefusedWithoutAllowList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	u, a := b.user(t, "refused@example.com", "user")
	// Saved by a name: only the connection can tell where it leads.
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	b.allowLoopback(t)
	ch, err := b.svc.Create(ctx, b.personal(t, u.ID), "en", webhooks.Input{Name: "local", Kind: webhooks.Slack, URL: url}, a)
	require.NoError(t, err)
	_, admin := b.user(t, "net-admin2@example.com", "admin")
	_, err = b.svc.SaveNetwork(ctx, "", admin)
	require.NoError(t, err)

	args := notify.WebhookArgs{ChannelID: ch.Channel.ID, EventID: "evt_y", EventKind: "node_not_ready", Template: notify.EmailNodeNotReady, Lang: "en", Sealed: b.box.Seal([]byte(`{}`))}
	err = b.svc.Deliver(ctx, args, 1, 8)
	var cancel *rivertype.JobCancelError
	require.ErrorAs(t, err, &cancel)
	var refused *webhooks.RefusedError
	require.ErrorAs(t, err, &refused)
	require.Zero(t, hits.Load())
	log := b.log(t, b.personal(t, u.ID), ch.Channel.ID)
	require.Len(t, log, 1)
	require.Equal(t, webhooks.StatusFailed, log[0].Status)
	require.Contains(t, log[0].Error, "internal")
}

// TestCreate: the fields are checked when saved; secrets and URLs never
// reach the audit log.
func TestCreate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u, a := b.user(t, "create@example.com", "user")
	tests := []struct {
		name  string
		in    webhooks.Input
		field string
		msg   string
	}{
		{"no name", webhooks.Input{Kind: webhooks.Slack, URL: "https://hooks.slack.com/services/x"}, webhooks.FieldName, "ErrWebhookName"},
		{"unknown kind", webhooks.Input{Name: "n", Kind: "teams", URL: "https://example.com/"}, webhooks.FieldKind, "ErrWebhookKind"},
		{"ftp", webhooks.Input{Name: "n", Kind: webhooks.Generic, URL: "ftp://example.com/"}, webhooks.FieldURL, "ErrWebhookURL"},
		{"no host", webhooks.Input{Name: "n", Kind: webhooks.Generic, URL: "https:///path"}, webhooks.FieldURL, "ErrWebhookURL"},
		{"credentials", webhooks.Input{Name: "n", Kind: webhooks.Generic, URL: "https://u:p@example.com/"}, webhooks.FieldURL, "ErrWebhookURL"},
		{"loopback", webhooks.Input{Name: "n", Kind: webhooks.Generic, URL: "http://127.0.0.1:8080/"}, webhooks.FieldURL, "ErrWebhookURLInternal"},
		{"IPv6 loopback", webhooks.Input{Name: "n", Kind: webhooks.Generic, URL: "http://[::1]/"}, webhooks.FieldURL, "ErrWebhookURLInternal"},
		{"localhost", webhooks.Input{Name: "n", Kind: webhooks.Generic, URL: "http://localhost/"}, webhooks.FieldURL, "ErrWebhookURLInternal"},
		{"metadata", webhooks.Input{Name: "n", Kind: webhooks.Generic, URL: "http://169.254.169.254/latest/meta-data/"}, webhooks.FieldURL, "ErrWebhookURLInternal"},
		{"private", webhooks.Input{Name: "n", Kind: webhooks.Generic, URL: "https://10.0.0.5/"}, webhooks.FieldURL, "ErrWebhookURLInternal"},
		{"private 192.168", webhooks.Input{Name: "n", Kind: webhooks.Generic, URL: "https://192.168.1.1/"}, webhooks.FieldURL, "ErrWebhookURLInternal"},
		{"long secret", webhooks.Input{Name: "n", Kind: webhooks.DingTalk, URL: "https://oapi.dingtalk.com/robot/send?access_token=x", Secret: strings.Repeat("s", 201)}, webhooks.FieldSecret, "ErrWebhookSecret"},
	}
	for _, tt := range tests {
		_, err := b.svc.Create(ctx, b.personal(t, u.ID), "en", tt.in, a)
		var errs input.Errors
		require.ErrorAs(t, err, &errs, tt.name)
		require.Equal(t, input.Errors{tt.field: tt.msg}, errs, tt.name)
	}
	chans, err := b.svc.List(ctx, b.personal(t, u.ID))
	require.NoError(t, err)
	require.Empty(t, chans, "nothing half-written")

	c, err := b.svc.Create(ctx, b.personal(t, u.ID), "en", webhooks.Input{Name: " bot ", Kind: webhooks.DingTalk, URL: "https://oapi.dingtalk.com/robot/send?access_token=TOKEN", Secret: "SECRETVALUE"}, a)
	require.NoError(t, err)
	require.Empty(t, c.Secret, "a DingTalk secret is the user's own, not shown back")
	require.Equal(t, "bot", c.Channel.Name)
	require.Equal(t, "oapi.dingtalk.com", c.Channel.Host)
	require.True(t, c.Channel.Signed)
	s, err := b.svc.Create(ctx, b.personal(t, u.ID), "en", webhooks.Input{Name: "slack", Kind: webhooks.Slack, URL: "https://hooks.slack.com/services/T/B/X", Secret: "ignored"}, a)
	require.NoError(t, err)
	require.False(t, s.Channel.Signed, "Slack takes no secret")

	var details string
	require.NoError(t, b.svc.Pool.QueryRow(ctx, "SELECT string_agg(details::text, ' ') FROM audit_events WHERE action = $1 AND actor_id = $2", webhooks.ActionCreate, u.ID).Scan(&details))
	require.Contains(t, details, "oapi.dingtalk.com")
	require.NotContains(t, details, "SECRETVALUE")
	require.NotContains(t, details, "TOKEN")
	var stored string
	require.NoError(t, b.svc.Pool.QueryRow(ctx, "SELECT url_sealed || secret_sealed FROM webhook_channels WHERE id = $1", c.Channel.ID).Scan(&stored))
	require.NotContains(t, stored, "TOKEN")
	require.NotContains(t, stored, "SECRETVALUE")

	for i := 2; i < webhooks.MaxChannels; i++ {
		_, err := b.svc.Create(ctx, b.personal(t, u.ID), "en", webhooks.Input{Name: "more", Kind: webhooks.WeCom, URL: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k"}, a)
		require.NoError(t, err)
	}
	_, err = b.svc.Create(ctx, b.personal(t, u.ID), "en", webhooks.Input{Name: "one too many", Kind: webhooks.WeCom, URL: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k"}, a)
	var errs input.Errors
	require.ErrorAs(t, err, &errs)
	require.Equal(t, "ErrWebhookTooMany", errs[webhooks.FieldName])
}

// TestOwnership: users see and act on their own channels only; the
// platform's channels are the admins'.
func TestOwnership(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	alice, aa := b.user(t, "alice@example.com", "user")
	bob, ba := b.user(t, "bob@example.com", "user")
	_, admin := b.user(t, "admin@example.com", "admin")
	ch, err := b.svc.Create(ctx, b.personal(t, alice.ID), "en", webhooks.Input{Name: "alice", Kind: webhooks.Slack, URL: "https://hooks.slack.com/services/A"}, aa)
	require.NoError(t, err)
	list, err := b.svc.List(ctx, b.personal(t, bob.ID))
	require.NoError(t, err)
	require.Empty(t, list)
	_, err = b.svc.Log(ctx, b.personal(t, bob.ID), ch.Channel.ID)
	require.ErrorIs(t, err, webhooks.ErrNotFound)
	_, err = b.svc.Test(ctx, b.personal(t, bob.ID), ch.Channel.ID, "en", ba)
	require.ErrorIs(t, err, webhooks.ErrNotFound)
	require.ErrorIs(t, b.svc.Delete(ctx, b.personal(t, bob.ID), ch.Channel.ID, ba), webhooks.ErrNotFound)
	require.ErrorIs(t, b.svc.Delete(ctx, webhooks.Platform, ch.Channel.ID, admin), webhooks.ErrNotFound, "a user's channel is not the platform's")

	_, err = b.svc.Create(ctx, webhooks.Platform, "en", webhooks.Input{Name: "ops", Kind: webhooks.WeCom, URL: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k"}, ba)
	require.ErrorIs(t, err, adminauth.ErrNotAdmin)
	_, err = b.svc.SaveNetwork(ctx, "10.0.0.0/8", ba)
	require.ErrorIs(t, err, adminauth.ErrNotAdmin)
	p, err := b.svc.Create(ctx, webhooks.Platform, "zh-CN", webhooks.Input{Name: "ops", Kind: webhooks.WeCom, URL: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k"}, admin)
	require.NoError(t, err)
	_, err = b.svc.Test(ctx, webhooks.Platform, p.Channel.ID, "en", ba)
	require.ErrorIs(t, err, adminauth.ErrNotAdmin, "a platform channel's test is the admins'")
	_, err = b.svc.Log(ctx, b.personal(t, alice.ID), p.Channel.ID)
	require.ErrorIs(t, err, webhooks.ErrNotFound)
	require.ErrorIs(t, b.svc.Delete(ctx, b.personal(t, alice.ID), p.Channel.ID, aa), webhooks.ErrNotFound)
	platform, err := b.svc.List(ctx, webhooks.Platform)
	require.NoError(t, err)
	require.Len(t, platform, 1)
	require.Equal(t, "ops", platform[0].Name)
}

// TestPageAndGet: the channels of a user, or the platform's, read a page
// at a time, newest first, and one at a time; never another's.
func TestPageAndGet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	alice, aa := b.user(t, "alice@example.com", "user")
	_, admin := b.user(t, "admin@example.com", "admin")
	mine, err := b.svc.Create(ctx, b.personal(t, alice.ID), "en", webhooks.Input{Name: "mine", Kind: webhooks.Slack, URL: "https://hooks.slack.com/services/A"}, aa)
	require.NoError(t, err)
	var platform []int64
	for _, name := range []string{"ops-1", "ops-2", "ops-3"} {
		c, err := b.svc.Create(ctx, webhooks.Platform, "en", webhooks.Input{Name: name, Kind: webhooks.Slack, URL: "https://hooks.slack.com/services/" + name}, admin)
		require.NoError(t, err)
		platform = append(platform, c.Channel.ID)
	}

	page, err := b.svc.Page(ctx, webhooks.Platform, 0, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"ops-3", "ops-2"}, []string{page[0].Name, page[1].Name})
	page, err = b.svc.Page(ctx, webhooks.Platform, page[1].ID, 2)
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, platform[0], page[0].ID)
	page, err = b.svc.Page(ctx, b.personal(t, alice.ID), 0, 10)
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, "mine", page[0].Name)

	got, err := b.svc.Get(ctx, webhooks.Platform, platform[1])
	require.NoError(t, err)
	require.Equal(t, "ops-2", got.Name)
	require.Equal(t, "hooks.slack.com", got.Host)
	_, err = b.svc.Get(ctx, webhooks.Platform, mine.Channel.ID)
	require.ErrorIs(t, err, webhooks.ErrNotFound, "a user's channel is not the platform's")
	_, err = b.svc.Get(ctx, b.personal(t, alice.ID), platform[0])
	require.ErrorIs(t, err, webhooks.ErrNotFound)
}

// TestTest: a test message goes out at once, is logged and audited.
func TestTest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.allowLoopback(t)
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		body.Store(string(raw))
		_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok"}`))
	}))
	t.Cleanup(srv.Close)
	u, a := b.user(t, "tester@example.com", "user")
	ch, err := b.svc.Create(ctx, b.personal(t, u.ID), "en", webhooks.Input{Name: "team", Kind: webhooks.WeCom, URL: srv.URL}, a)
	require.NoError(t, err)
	o, err := b.svc.Test(ctx, b.personal(t, u.ID), ch.Channel.ID, "zh-CN", a)
	require.NoError(t, err)
	require.NoError(t, o.Err)
	require.Contains(t, body.Load(), "KubeBYON 测试消息")
	require.Contains(t, body.Load(), "team")
	log := b.log(t, b.personal(t, u.ID), ch.Channel.ID)
	require.Len(t, log, 1)
	require.Equal(t, webhooks.TestKind, log[0].EventKind)
	require.Equal(t, webhooks.StatusDelivered, log[0].Status)
	var n int
	require.NoError(t, b.svc.Pool.QueryRow(ctx, "SELECT count(*) FROM audit_events WHERE action = $1 AND target_id = $2", webhooks.ActionTest, fmt.Sprint(ch.Channel.ID)).Scan(&n))
	require.Equal(t, 1, n)
}

// TestTellQueuesDeliveries: notify.Tell queues one delivery per webhook
// channel the user added in their personal organization, for the kinds
// the user wants there (by default those that need attention);
// TellPlatform queues one per platform channel.
func TestTellQueuesDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u, a := b.user(t, "told@example.com", "user")
	_, admin := b.user(t, "ops-admin@example.com", "admin")
	box := b.box
	tell := func(kind notify.Kind, template string) {
		t.Helper()
		tx, err := b.svc.Pool.Begin(ctx)
		require.NoError(t, err)
		_, err = notify.Notices{Box: box, River: b.rc}.Tell(ctx, tx, u, kind, template, map[string]any{"Cluster": "demo", "ClusterID": 1})
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
	}
	driver := riverpgxv5.New(b.svc.Pool)
	tell(notify.ClusterFailed, notify.EmailClusterFailed)
	rivertest.RequireNotInserted(ctx, t, driver, notify.WebhookArgs{}, nil)

	c1, err := b.svc.Create(ctx, b.personal(t, u.ID), "en", webhooks.Input{Name: "one", Kind: webhooks.Slack, URL: "https://hooks.slack.com/services/1"}, a)
	require.NoError(t, err)
	c2, err := b.svc.Create(ctx, b.personal(t, u.ID), "en", webhooks.Input{Name: "two", Kind: webhooks.Generic, URL: "https://example.com/hook"}, a)
	require.NoError(t, err)
	// A channel the user adds in a team's organization is for the team's
	// clusters, not for the user's own events.
	q := queries.New(b.svc.Pool)
	team, err := q.OrgCreate(ctx, queries.OrgCreateParams{Name: "team", CreatedBy: pgtype.Int8{Int64: u.ID, Valid: true}})
	require.NoError(t, err)
	require.NoError(t, q.OrgMemberAdd(ctx, queries.OrgMemberAddParams{OrgID: team.ID, UserID: u.ID, Role: string(orgs.Owner)}))
	_, err = b.svc.Create(ctx, orgs.Acting{OrgID: team.ID, UserID: u.ID, Cap: orgs.Owner}, "en", webhooks.Input{Name: "team", Kind: webhooks.Slack, URL: "https://hooks.slack.com/services/team"}, a)
	require.NoError(t, err)
	tell(notify.ClusterReady, notify.EmailClusterReady)
	rivertest.RequireNotInserted(ctx, t, driver, notify.WebhookArgs{}, nil)
	tell(notify.ClusterFailed, notify.EmailClusterFailed)
	jobs := rivertest.RequireManyInserted(ctx, t, driver, []rivertest.ExpectedJob{
		{Args: notify.WebhookArgs{}, Opts: &rivertest.RequireInsertedOpts{Queue: notify.QueueWebhook, MaxAttempts: notify.WebhookMaxAttempts}},
		{Args: notify.WebhookArgs{}},
	})
	var got []int64
	for _, j := range jobs {
		var args notify.WebhookArgs
		require.NoError(t, json.Unmarshal(j.EncodedArgs, &args))
		got = append(got, args.ChannelID)
		require.Equal(t, "cluster_failed", args.EventKind)
	}
	require.ElementsMatch(t, []int64{c1.Channel.ID, c2.Channel.ID}, got)

	p, err := b.svc.Create(ctx, webhooks.Platform, "en", webhooks.Input{Name: "ops", Kind: webhooks.Feishu, URL: "https://open.feishu.cn/open-apis/bot/v2/hook/x"}, admin)
	require.NoError(t, err)
	tx, err := b.svc.Pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, notify.Notices{Box: box, River: b.rc}.TellPlatform(ctx, tx, notify.EdgeOutOfStep, notify.EmailEdgeOutOfStep, map[string]any{"Edge": "e1"}))
	require.NoError(t, tx.Commit(ctx))
	var n int
	require.NoError(t, b.svc.Pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'webhook_delivery' AND (args->>'channel_id')::bigint = $1", p.Channel.ID).Scan(&n))
	require.Equal(t, 1, n)
}

// TestOrgRoles: an organization's owners and admins add, test and remove
// its channels; its members and viewers (and an admin's read key) see
// them and their logs but change nothing; a user of another organization
// finds nothing, and cannot add one to it.
func TestOrgRoles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.allowLoopback(t)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	q := queries.New(b.svc.Pool)
	owner, oa := b.user(t, "org-owner@example.com", "user")
	org, err := q.OrgCreate(ctx, queries.OrgCreateParams{Name: "team", CreatedBy: pgtype.Int8{Int64: owner.ID, Valid: true}})
	require.NoError(t, err)
	require.NoError(t, q.OrgMemberAdd(ctx, queries.OrgMemberAddParams{OrgID: org.ID, UserID: owner.ID, Role: string(orgs.Owner)}))
	ch, err := b.svc.Create(ctx, orgs.Acting{OrgID: org.ID, UserID: owner.ID, Cap: orgs.Owner}, "en", webhooks.Input{Name: "team", Kind: webhooks.Slack, URL: srv.URL}, oa)
	require.NoError(t, err)

	tests := []struct {
		name   string
		role   orgs.Role // in the organization; "" for none
		cap    orgs.Role
		manage bool
		see    bool
	}{
		{"admin", orgs.Admin, orgs.Admin, true, true},
		{"member", orgs.Member, orgs.Member, false, true},
		{"viewer", orgs.Viewer, orgs.Viewer, false, true},
		{"admin's read key", orgs.Admin, orgs.Viewer, false, true},
		{"other", "", orgs.Owner, false, false},
	}
	// Each role in parallel; the group ends when all have.
	t.Run("roles", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				u, a := b.user(t, strings.ReplaceAll(tt.name, " ", "-")+"@example.com", "user")
				if tt.role != "" {
					require.NoError(t, q.OrgMemberAdd(ctx, queries.OrgMemberAddParams{OrgID: org.ID, UserID: u.ID, Role: string(tt.role)}))
				}
				who := orgs.Acting{OrgID: org.ID, UserID: u.ID, Cap: tt.cap}
				refused := orgs.ErrForbidden
				if !tt.see {
					refused = webhooks.ErrNotFound
				}

				list, err := b.svc.List(ctx, who)
				require.NoError(t, err)
				_, getErr := b.svc.Get(ctx, who, ch.Channel.ID)
				_, logErr := b.svc.Log(ctx, who, ch.Channel.ID)
				if tt.see {
					// The team's channel; the admin's subtest, running
					// beside this one, may have added one of its own.
					require.True(t, slices.ContainsFunc(list, func(c webhooks.Channel) bool { return c.ID == ch.Channel.ID }), "the team's channel is listed")
					for _, c := range list {
						require.Contains(t, []string{"team", "by admin"}, c.Name, "only the organization's channels")
					}
					require.NoError(t, getErr)
					require.NoError(t, logErr)
				} else {
					require.Empty(t, list)
					require.ErrorIs(t, getErr, webhooks.ErrNotFound)
					require.ErrorIs(t, logErr, webhooks.ErrNotFound)
				}

				in := webhooks.Input{Name: "by " + tt.name, Kind: webhooks.Slack, URL: srv.URL}
				made, err := b.svc.Create(ctx, who, "en", in, a)
				_, testErr := b.svc.Test(ctx, who, ch.Channel.ID, "en", a)
				if !tt.manage {
					require.ErrorIs(t, err, refused)
					require.ErrorIs(t, testErr, refused)
					require.ErrorIs(t, b.svc.Delete(ctx, who, ch.Channel.ID, a), refused)
					return
				}
				require.NoError(t, err)
				require.NoError(t, testErr)
				require.NoError(t, b.svc.Delete(ctx, who, made.Channel.ID, a))
			})
		}
	})
	var n int
	require.NoError(t, b.svc.Pool.QueryRow(ctx, "SELECT count(*) FROM webhook_channels WHERE org_id = $1", org.ID).Scan(&n))
	require.Equal(t, 1, n, "only the owner's channel is left")
}
