package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/entitlements"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// orgBillingFixture is a platform with billing open (an admin, a paid
// plan w.Plan with 10 clusters and a "Tiny" one with 1) and a team, "Moon
// Base": ann owns it, bob is a member; it has two live clusters, the
// newer one, bob's, with two nodes, and a deleted one.
type orgBillingFixture struct {
	b                  *handlerstest.Bundle
	w                  handlerstest.BillingWorld
	tiny, free         queries.Plan
	ann, bob           *handlerstest.Client
	annEmail, bobEmail string
	annID, bobID       int64
	team               int64
	older, newer       queries.Cluster
}

func newOrgBillingFixture(t *testing.T) orgBillingFixture {
	t.Helper()
	ctx := context.Background()
	b := handlerstest.Setup(t)
	f := orgBillingFixture{b: b, w: handlerstest.NewBillingWorld(t, b, "root")}
	var err error
	f.tiny, err = f.w.Billing.CreatePlan(ctx, billing.PlanInput{
		Name: "Tiny", MaxClusters: 1, MaxNodesPerCluster: 1, MaxHostnamesPerCluster: 1,
		Currency: "USD", PriceMonthly: "1", Public: true, SortOrder: 2,
	}, f.w.AdminActor)
	require.NoError(t, err)
	q := queries.New(b.Pool)
	f.free, err = q.PlanDefault(ctx)
	require.NoError(t, err)
	f.ann, f.annEmail = b.SignedUpUser(t, "ann")
	f.bob, f.bobEmail = b.SignedUpUser(t, "bob")
	f.annID, f.bobID = b.UserID(t, f.annEmail), b.UserID(t, f.bobEmail)
	o, err := (&orgs.Service{Pool: b.Pool}).Create(ctx, "Moon Base", audit.Actor{UserID: f.annID, Email: f.annEmail})
	require.NoError(t, err)
	f.team = o.ID
	_, err = b.Pool.Exec(ctx, "INSERT INTO organization_members (org_id, user_id, role) VALUES ($1, $2, 'member')", f.team, f.bobID)
	require.NoError(t, err)
	cluster := func(owner int64, name string) queries.Cluster {
		c, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{
			OrgID: pgtype.Int8{Int64: f.team, Valid: true}, OwnerID: owner, Name: name, Slug: name + "-moon",
			KubernetesVersion: "v1.34.0", PublicAccessMode: "nodeport",
		})
		require.NoError(t, err)
		return c
	}
	gone := cluster(f.annID, "gone")
	_, err = b.Pool.Exec(ctx, "UPDATE clusters SET status = 'deleted' WHERE id = $1", gone.ID)
	require.NoError(t, err)
	f.older, f.newer = cluster(f.annID, "older"), cluster(f.bobID, "newer")
	for _, n := range []string{"node-a", "node-b"} {
		require.NoError(t, q.NodeUpsert(ctx, queries.NodeUpsertParams{
			ClusterID: f.newer.ID, Name: n, Ready: true, Conditions: []byte("[]"), Addresses: []byte("[]"),
		}))
	}
	return f
}

// subscription is the team's subscription as stored.
func (f orgBillingFixture) subscription(t *testing.T, org int64) queries.Subscription {
	t.Helper()
	s, err := queries.New(f.b.Pool).SubscriptionGet(context.Background(), org)
	require.NoError(t, err)
	return s
}

// usageRow is the usage row of limit key on an organization's page:
// what it uses and what its plan allows.
func usageRow(t *testing.T, body, key string) (used, max string) {
	t.Helper()
	m := regexp.MustCompile(`data-testid="admin-org-usage-` + key + `" data-used="(\d+)" data-max="(\d+)"`).FindStringSubmatch(body)
	require.NotNil(t, m, "the usage of %s is shown", key)
	return m[1], m[2]
}

// TestAdminOrgPagePlanUsageClusters: a team's admin page shows its plan
// (the default one: it paid for none) and subscription, what it uses of
// each limit ("2 of 1"), and its live clusters, newest first, each
// linking to its admin page with its state, nodes and who made it; the
// admin API's organization says the same.
func TestAdminOrgPagePlanUsageClusters(t *testing.T) {
	t.Parallel()
	f := newOrgBillingFixture(t)
	page := fmt.Sprintf("/admin/organizations/%d", f.team)

	code, body := f.w.Admin.Get(page)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-org-plan"`)
	require.Contains(t, body, `data-testid="sub-plan">`+f.free.Name+`<`)
	require.Contains(t, body, `data-testid="sub-status" data-status="active"`)
	require.Contains(t, body, "No end (no paid period)")
	used, max := usageRow(t, body, "clusters")
	require.Equal(t, []string{"2", fmt.Sprint(f.free.MaxClusters)}, []string{used, max}, "the deleted cluster is not counted")
	used, max = usageRow(t, body, "nodes")
	require.Equal(t, []string{"2", fmt.Sprint(f.free.MaxNodesPerCluster)}, []string{used, max})
	used, _ = usageRow(t, body, "hostnames")
	require.Equal(t, "0", used)
	require.Contains(t, body, fmt.Sprintf("2 of %d", f.free.MaxClusters))
	require.Contains(t, body, `data-testid="admin-org-usage-ingress"`)

	require.Contains(t, body, "Clusters (2)")
	rows := regexp.MustCompile(`(?s)data-testid="admin-org-cluster-row" data-cluster-id="(\d+)">\s*<td><a href="([^"]+)" data-testid="admin-org-cluster-link">([^<]+)</a>.*?data-testid="admin-org-cluster-nodes">(\d+)<.*?<a href="/admin/users/(\d+)">`).
		FindAllStringSubmatch(body, -1)
	require.Len(t, rows, 2)
	require.Equal(t, []string{fmt.Sprint(f.newer.ID), fmt.Sprintf("/admin/clusters/%d", f.newer.ID), "newer", "2", fmt.Sprint(f.bobID)}, rows[0][1:], "newest first")
	require.Equal(t, []string{fmt.Sprint(f.older.ID), fmt.Sprintf("/admin/clusters/%d", f.older.ID), "older", "0", fmt.Sprint(f.annID)}, rows[1][1:])
	require.NotContains(t, body, ">gone<")
	require.NotContains(t, body, `data-testid="admin-org-clusters-more"`)

	// The forms post to the organization's own routes.
	for _, action := range []string{"plan", "extend", "cancel"} {
		require.Contains(t, body, fmt.Sprintf(`action="%s/subscription/%s" data-testid="sub-form-%s"`, page, action, action))
	}
	require.Contains(t, body, "told to the organization&#39;s owners")

	// A personal organization without clusters.
	annOrg := actingAs(t, f.b.Pool, f.annID).OrgID
	code, body = f.w.Admin.Get(fmt.Sprintf("/admin/organizations/%d", annOrg))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Clusters (0)")
	require.Contains(t, body, "No clusters.")
	used, _ = usageRow(t, body, "clusters")
	require.Equal(t, "0", used)

	// The admin API's organization.
	key := f.w.Admin.CreateScopedKey("ops", "admin")
	r := f.b.APICall(t, http.MethodGet, "/api/v1/admin/organizations/"+fmt.Sprint(f.team), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	type orgJSON struct {
		Plan struct {
			ID          int64  `json:"id"`
			Name        string `json:"name"`
			Default     bool   `json:"default"`
			MaxClusters int32  `json:"max_clusters"`
		} `json:"plan"`
		Subscription adminSubscriptionJSON `json:"subscription"`
		Usage        struct {
			Clusters            int64 `json:"clusters"`
			MostNodesInACluster int64 `json:"most_nodes_in_a_cluster"`
		} `json:"usage"`
		Clusters []struct {
			ID         int64   `json:"id"`
			Name       string  `json:"name"`
			Status     string  `json:"status"`
			Nodes      int64   `json:"nodes"`
			OwnerID    int64   `json:"owner_id"`
			OwnerEmail *string `json:"owner_email"`
		} `json:"clusters"`
		ClusterCount int64 `json:"cluster_count"`
	}
	got := handlerstest.DecodeAs[orgJSON](t, r)
	require.Equal(t, f.free.ID, got.Plan.ID)
	require.True(t, got.Plan.Default)
	require.Equal(t, f.free.MaxClusters, got.Plan.MaxClusters)
	require.Equal(t, f.team, got.Subscription.OrgID)
	require.Equal(t, "Moon Base", got.Subscription.OrgName)
	require.Equal(t, "active", got.Subscription.Status)
	require.Equal(t, int64(2), got.Usage.Clusters)
	require.Equal(t, int64(2), got.Usage.MostNodesInACluster)
	require.Equal(t, int64(2), got.ClusterCount)
	require.Len(t, got.Clusters, 2)
	require.Equal(t, []any{f.newer.ID, "newer", "pending", int64(2), f.bobID, f.bobEmail},
		[]any{got.Clusters[0].ID, got.Clusters[0].Name, got.Clusters[0].Status, got.Clusters[0].Nodes, got.Clusters[0].OwnerID, *got.Clusters[0].OwnerEmail})
	require.Equal(t, f.older.ID, got.Clusters[1].ID)
	requireAPIRefusal(t, f.b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/admin/organizations/%d", f.team+1000), key, ""), http.StatusNotFound, "", "an unknown organization")
}

// TestAdminOrgSubscriptionFromThePage: an admin puts a team on a plan,
// extends its paid period and cancels it from the team's page, with the
// user page's fields, refusals and messages; each change is audited on
// the team, its entitlements follow (a plan of one cluster refuses a
// third, and the page shows the team over it), and the personal
// organization of its owner is not touched.
func TestAdminOrgSubscriptionFromThePage(t *testing.T) {
	t.Parallel()
	f := newOrgBillingFixture(t)
	ctx := context.Background()
	admin := f.w.Admin
	page := fmt.Sprintf("/admin/organizations/%d", f.team)
	annOrg := actingAs(t, f.b.Pool, f.annID).OrgID
	entitled := func() entitlements.Entitlements {
		t.Helper()
		e, err := entitlements.For(ctx, queries.New(f.b.Pool), f.team)
		require.NoError(t, err)
		return e
	}
	require.NoError(t, entitled().Cluster(2), "the default plan allows a third cluster")

	// Put on a plan: a reason is required, the plan must exist.
	resp := admin.Post(page, page+"/subscription/plan", url.Values{"plan_id": {fmt.Sprint(f.tiny.ID)}, "reason": {" "}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	body := handlerstest.ReadBody(t, resp)
	require.Contains(t, body, `data-testid="admin-org-name">Moon Base<`, "the team's page again")
	require.Contains(t, body, `data-testid="error-reason-plan">Say why`)
	require.Contains(t, body, fmt.Sprintf(`<option value="%d" selected>`, f.tiny.ID), "the choice is kept")
	resp = admin.Post(page, page+"/subscription/plan", url.Values{"plan_id": {"999999"}, "reason": {"typo"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "There is no such plan.")
	require.Equal(t, f.free.ID, f.subscription(t, f.team).PlanID)

	resp = admin.Post(page, page+"/subscription/plan", url.Values{"plan_id": {fmt.Sprint(f.tiny.ID)}, "reason": {"Small sponsor"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, page, resp.Header.Get("Location"))
	require.Equal(t, f.tiny.ID, f.subscription(t, f.team).PlanID)
	require.Equal(t, f.free.ID, f.subscription(t, annOrg).PlanID, "the owner's personal organization is not touched")
	_, body = admin.Get(page)
	require.Contains(t, body, "The organization is on the new plan.")
	require.Contains(t, body, `data-testid="sub-plan">Tiny<`)
	used, max := usageRow(t, body, "clusters")
	require.Equal(t, []string{"2", "1"}, []string{used, max})
	require.Regexp(t, `data-testid="admin-org-usage-clusters" data-used="2" data-max="1" data-over`, body)
	// The team's entitlements follow: one cluster, and it has two.
	require.Equal(t, f.tiny.ID, entitled().Plan.ID)
	err := entitled().Cluster(2)
	require.ErrorIs(t, err, entitlements.ErrLimit)
	require.Equal(t, "ErrLimitClusters", err.Error())

	// Extend: only a paid period, by 1 to 366 days, for a reason.
	resp = admin.Post(page, page+"/subscription/extend", url.Values{"days": {"5"}, "reason": {"Outage"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="sub-error-extend">There is no paid period to change.`)
	end := time.Now().Add(10 * 24 * time.Hour).UTC().Truncate(time.Second)
	_, err = f.b.Pool.Exec(ctx, `UPDATE subscriptions SET period = 'month', period_anchor = now(), current_period_end = $2 WHERE org_id = $1`, f.team, end)
	require.NoError(t, err)
	resp = admin.Post(page, page+"/subscription/extend", url.Values{"days": {"lots"}, "reason": {"Outage"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	body = handlerstest.ReadBody(t, resp)
	require.Contains(t, body, `data-testid="error-days-extend">Enter a number of days from 1 to 366.`)
	require.Contains(t, body, `value="Outage"`, "the reason is kept")
	resp = admin.Post(page, page+"/subscription/extend", url.Values{"days": {"5"}, "reason": {"Outage on the 3rd"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, page, resp.Header.Get("Location"))
	require.True(t, f.subscription(t, f.team).CurrentPeriodEnd.Time.Equal(end.AddDate(0, 0, 5)))
	_, body = admin.Get(page)
	require.Contains(t, body, "Period extended.")

	// Cancel now: the default plan at once, and its limits.
	resp = admin.Post(page, page+"/subscription/cancel", url.Values{"reason": {""}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-reason-cancel">`)
	resp = admin.Post(page, page+"/subscription/cancel", url.Values{"reason": {"Sponsorship over"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	sub := f.subscription(t, f.team)
	require.Equal(t, f.free.ID, sub.PlanID)
	require.Equal(t, billing.StatusCancelled, sub.Status)
	require.False(t, sub.CurrentPeriodEnd.Valid)
	require.NoError(t, entitled().Cluster(2), "the default plan again")
	_, body = admin.Get(page)
	require.Contains(t, body, "Subscription cancelled: the organization is on the default plan.")
	require.Contains(t, body, `data-testid="sub-status" data-status="cancelled"`)
	require.Equal(t, billing.StatusActive, f.subscription(t, annOrg).Status, "the owner's personal organization is not touched")

	// Each change audited on the team, with its reason.
	team := strconv.FormatInt(f.team, 10)
	for action, reason := range map[string]string{
		"billing.admin_set_plan": "Small sponsor", "billing.admin_extend": "Outage on the 3rd", "billing.admin_cancel": "Sponsorship over",
	} {
		var got string
		require.NoError(t, f.b.Pool.QueryRow(ctx, `SELECT details->>'reason' FROM audit_events
			WHERE action = $1 AND actor_id = $2 AND target_type = 'organization' AND target_id = $3`, action, f.w.AdminActor.UserID, team).Scan(&got), action)
		require.Equal(t, reason, got, action)
	}

	// An organization that does not exist.
	for _, action := range []string{"plan", "extend", "cancel"} {
		resp = admin.Post(page, fmt.Sprintf("/admin/organizations/%d/subscription/%s", f.team+1000, action),
			url.Values{"plan_id": {fmt.Sprint(f.tiny.ID)}, "days": {"5"}, "reason": {"x"}})
		require.Equal(t, http.StatusNotFound, resp.StatusCode, action)
	}

	// The user page says which organization its forms change: the
	// personal one.
	_, body = admin.Get(fmt.Sprintf("/admin/users/%d", f.annID))
	require.Contains(t, body, fmt.Sprintf(`action="/admin/users/%d/subscription/plan"`, f.annID))
	require.Regexp(t, `data-testid="sub-personal-note">These change the subscription of their personal organization, ann;`, body)
}

// TestAPIAdminOrgSubscription: an admin key reads a team's subscription,
// puts it on a plan, extends its period and cancels it, with the user
// routes' rules and refusals (422 at a field, 409 without a paid period,
// 404 for an organization that does not exist), each audited on the
// team; its entitlements follow.
func TestAPIAdminOrgSubscription(t *testing.T) {
	t.Parallel()
	f := newOrgBillingFixture(t)
	ctx := context.Background()
	b := f.b
	key := f.w.Admin.CreateScopedKey("ops", "admin")
	path := func(org int64, rest string) string {
		return fmt.Sprintf("/api/v1/admin/organizations/%d/subscription%s", org, rest)
	}
	change := func(org int64, action, body string) handlerstest.APIResponse {
		return b.APICall(t, http.MethodPost, path(org, "/"+action), key, body)
	}
	unknown := f.team + 1000

	r := b.APICall(t, http.MethodGet, path(f.team, ""), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	sub := handlerstest.DecodeAs[adminSubscriptionJSON](t, r)
	require.Equal(t, adminSubscriptionJSON{OrgID: f.team, OrgName: "Moon Base", PlanID: f.free.ID, Plan: f.free.Name, Status: "active"}, sub)
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, path(unknown, ""), key, ""), http.StatusNotFound, "", "an unknown organization")
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, "/api/v1/admin/organizations/moon/subscription", key, ""), http.StatusNotFound, "", "not an id")

	// A plan by hand.
	requireAPIRefusal(t, change(f.team, "plan", fmt.Sprintf(`{"plan_id":%d,"reason":" "}`, f.tiny.ID)), http.StatusUnprocessableEntity, "reason", "no reason")
	requireAPIRefusal(t, change(f.team, "plan", fmt.Sprintf(`{"plan_id":%d,"reason":"gift"}`, f.tiny.ID+1000)), http.StatusUnprocessableEntity, "plan_id", "an unknown plan")
	requireAPIRefusal(t, change(unknown, "plan", fmt.Sprintf(`{"plan_id":%d,"reason":"gift"}`, f.tiny.ID)), http.StatusNotFound, "", "an unknown organization's")
	r = change(f.team, "plan", fmt.Sprintf(`{"plan_id":%d,"reason":"gift"}`, f.w.Plan.ID))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	sub = handlerstest.DecodeAs[adminSubscriptionJSON](t, r)
	require.Equal(t, []any{f.team, f.w.Plan.ID, "active"}, []any{sub.OrgID, sub.PlanID, sub.Status})
	require.Nil(t, sub.PeriodEnd)
	e, err := entitlements.For(ctx, queries.New(b.Pool), f.team)
	require.NoError(t, err)
	require.Equal(t, f.w.Plan.MaxClusters, e.Plan.MaxClusters, "the team's entitlements are the new plan's")

	// Extended: only a paid period.
	requireAPIRefusal(t, change(f.team, "extend", `{"days":10,"reason":"outage"}`), http.StatusConflict, "", "no paid period")
	end := time.Now().Add(10 * 24 * time.Hour).UTC().Truncate(time.Second)
	_, err = b.Pool.Exec(ctx, `UPDATE subscriptions SET period = 'month', period_anchor = now(), current_period_end = $2 WHERE org_id = $1`, f.team, end)
	require.NoError(t, err)
	requireAPIRefusal(t, change(f.team, "extend", `{"days":0,"reason":"outage"}`), http.StatusUnprocessableEntity, "days", "no days")
	requireAPIRefusal(t, change(unknown, "extend", `{"days":10,"reason":"outage"}`), http.StatusNotFound, "", "an unknown organization's")
	r = change(f.team, "extend", `{"days":10,"reason":"outage"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	sub = handlerstest.DecodeAs[adminSubscriptionJSON](t, r)
	require.True(t, end.AddDate(0, 0, 10).Equal(*sub.PeriodEnd), "%s", sub.PeriodEnd)

	// Ended at once.
	requireAPIRefusal(t, change(f.team, "cancel", `{"reason":""}`), http.StatusUnprocessableEntity, "reason", "no reason")
	requireAPIRefusal(t, change(unknown, "cancel", `{"reason":"abuse"}`), http.StatusNotFound, "", "an unknown organization's")
	r = change(f.team, "cancel", `{"reason":"abuse"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	sub = handlerstest.DecodeAs[adminSubscriptionJSON](t, r)
	require.Equal(t, []any{f.free.ID, "cancelled"}, []any{sub.PlanID, sub.Status})
	require.Nil(t, sub.PeriodEnd)
	require.Equal(t, f.free.ID, f.subscription(t, actingAs(t, b.Pool, f.annID).OrgID).PlanID, "the owner's personal organization is not touched")

	events := activityOf(t, b, key, f.w.AdminEmail)
	team := strconv.FormatInt(f.team, 10)
	require.Equal(t, "gift", requireAudited(t, events, f.w.AdminActor.UserID, "billing.admin_set_plan", "organization", team).Details["reason"])
	requireAudited(t, events, f.w.AdminActor.UserID, "billing.admin_extend", "organization", team)
	requireAudited(t, events, f.w.AdminActor.UserID, "billing.admin_cancel", "organization", team)
}

// TestAdminOrgSubscriptionIsAdminsOnly: the team's owner and a visitor
// get the admin area's 404 on the organization's subscription forms, and
// a user's keys the admin API's 403 on its subscription routes (as on
// every admin route); nothing changes.
func TestAdminOrgSubscriptionIsAdminsOnly(t *testing.T) {
	t.Parallel()
	f := newOrgBillingFixture(t)
	page := fmt.Sprintf("/admin/organizations/%d", f.team)
	form := url.Values{"plan_id": {fmt.Sprint(f.w.Plan.ID)}, "days": {"5"}, "reason": {"mine now"}}
	for _, who := range []struct {
		name, formPage string
		c              *handlerstest.Client
	}{{"owner", "/", f.ann}, {"visitor", "/login", f.b.Client(t)}} {
		code, body := who.c.Get(page)
		require.Equal(t, http.StatusNotFound, code, who.name)
		require.NotContains(t, body, "Moon Base", who.name)
		for _, action := range []string{"plan", "extend", "cancel"} {
			resp := who.c.Post(who.formPage, page+"/subscription/"+action, form)
			require.Equal(t, http.StatusNotFound, resp.StatusCode, "%s %s", who.name, action)
		}
	}
	for name, key := range map[string]string{"the owner's write key": f.ann.CreateKey("write"), "the owner's read key": f.ann.CreateScopedKey("read", "read")} {
		for _, tc := range []struct{ method, path, body string }{
			{http.MethodGet, "/api/v1" + page, ""},
			{http.MethodGet, "/api/v1" + page + "/subscription", ""},
			{http.MethodPost, "/api/v1" + page + "/subscription/plan", fmt.Sprintf(`{"plan_id":%d,"reason":"mine now"}`, f.w.Plan.ID)},
			{http.MethodPost, "/api/v1" + page + "/subscription/extend", `{"days":5,"reason":"mine now"}`},
			{http.MethodPost, "/api/v1" + page + "/subscription/cancel", `{"reason":"mine now"}`},
		} {
			r := f.b.APICall(t, tc.method, tc.path, key, tc.body)
			require.Equal(t, http.StatusForbidden, r.Status, "%s %s %s: %s", name, tc.method, tc.path, r.Body)
			require.Contains(t, r.Body, `"code":"insufficient_scope"`)
		}
	}
	sub := f.subscription(t, f.team)
	require.Equal(t, f.free.ID, sub.PlanID)
	require.Equal(t, billing.StatusActive, sub.Status)
	var n int
	require.NoError(t, f.b.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM audit_events WHERE action LIKE 'billing.admin_%' AND target_id = $1", strconv.FormatInt(f.team, 10)).Scan(&n))
	require.Zero(t, n)
}
