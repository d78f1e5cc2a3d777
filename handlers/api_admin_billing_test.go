package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// adminOrderJSON is an order as the admin API shows it.
type adminOrderJSON struct {
	ID        int64   `json:"id"`
	Number    string  `json:"number"`
	Status    string  `json:"status"`
	Total     int64   `json:"total"`
	Refunded  int64   `json:"refunded"`
	OrgID     int64   `json:"org_id"`
	OrgName   string  `json:"org_name"`
	UserID    int64   `json:"user_id"`
	UserEmail string  `json:"user_email"`
	Reference string  `json:"reference"`
	PaidAt    *string `json:"paid_at"`
	ClosedAt  *string `json:"closed_at"`
	Events    []struct {
		Kind    string `json:"kind"`
		ActorID *int64 `json:"actor_id"`
	} `json:"events"`
}

// adminSubscriptionJSON is a subscription as the admin API shows it.
type adminSubscriptionJSON struct {
	OrgID     int64      `json:"org_id"`
	OrgName   string     `json:"org_name"`
	PlanID    int64      `json:"plan_id"`
	Plan      string     `json:"plan"`
	Status    string     `json:"status"`
	Period    string     `json:"period"`
	PeriodEnd *time.Time `json:"period_end"`
}

// TestAPIAdminOrders: an admin key lists every organization's orders
// with the back office's filters, a page at a time, reads one with the
// organization it is for, who placed it and its history, marks one paid,
// cancels one and refunds part of one, no more than was paid, with the
// back office's rules; each action audited on the order's organization
// with the admin as the actor.
func TestAPIAdminOrders(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	w := handlerstest.NewBillingWorld(t, b, "orders-admin")
	key := w.Admin.CreateScopedKey("ops", "admin")
	_, buyer1, o1 := w.Order(t, b, "orders-one")
	_, buyer2, o2 := w.Order(t, b, "orders-two")
	_, _, o3 := w.Order(t, b, "orders-three")
	orderPath := func(id int64, rest string) string { return fmt.Sprintf("/api/v1/admin/orders/%d%s", id, rest) }
	unknown := o3.ID + 1000
	list := func(query url.Values) []int64 {
		var ids []int64
		for _, o := range adminPages[adminOrderJSON](t, b, key, "/api/v1/admin/orders", "orders", query) {
			ids = append(ids, o.ID)
		}
		return ids
	}

	// Newest first, a page at a time, filtered as in the back office.
	require.Equal(t, []int64{o3.ID, o2.ID, o1.ID}, list(nil))
	require.Equal(t, []int64{o2.ID}, list(url.Values{"email": {strings.ToUpper(buyer2.Email)}}))
	require.Equal(t, []int64{o3.ID}, list(url.Values{"number": {strings.ToLower(o3.Number)}}))
	require.Equal(t, []int64{o3.ID, o2.ID, o1.ID}, list(url.Values{"status": {"pending"}, "method": {"manual"}}))
	day := o1.CreatedAt.Time.UTC()
	require.Equal(t, []int64{o3.ID, o2.ID, o1.ID}, list(url.Values{"from": {day.Format(time.DateOnly)}}))
	require.Empty(t, list(url.Values{"to": {day.AddDate(0, 0, -1).Format(time.DateOnly)}}))
	for field, value := range map[string]string{"status": "bogus", "method": "cheque", "from": "2025-13-45"} {
		r := b.APICall(t, http.MethodGet, "/api/v1/admin/orders?"+url.Values{field: {value}}.Encode(), key, "")
		requireAPIRefusal(t, r, http.StatusUnprocessableEntity, field, field)
	}

	// One order, with its organization, buyer and history.
	r := b.APICall(t, http.MethodGet, orderPath(o1.ID, ""), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	got := handlerstest.DecodeAs[adminOrderJSON](t, r)
	require.Equal(t, o1.Number, got.Number)
	require.Equal(t, actingAs(t, b.Pool, buyer1.ID).OrgID, got.OrgID, "the buyer's personal organization")
	require.Equal(t, buyer1.Name, got.OrgName)
	require.Equal(t, buyer1.ID, got.UserID)
	require.Equal(t, buyer1.Email, got.UserEmail)
	require.Equal(t, "pending", got.Status)
	require.NotEmpty(t, got.Events)
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, orderPath(unknown, ""), key, ""), http.StatusNotFound, "", "an unknown order")

	// Marked paid, with a reference; not twice.
	requireAPIRefusal(t, b.APICall(t, http.MethodPost, orderPath(o1.ID, "/paid"), key, `{"reference":"  "}`),
		http.StatusUnprocessableEntity, "reference", "no reference")
	r = b.APICall(t, http.MethodPost, orderPath(o1.ID, "/paid"), key, `{"reference":" WIRE-7 "}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	got = handlerstest.DecodeAs[adminOrderJSON](t, r)
	require.Equal(t, "paid", got.Status)
	require.Equal(t, "WIRE-7", got.Reference)
	require.NotNil(t, got.PaidAt)
	paid := got.Events[len(got.Events)-1]
	require.Equal(t, "paid", paid.Kind)
	require.Equal(t, w.AdminActor.UserID, *paid.ActorID, "the history names the admin")
	requireAPIRefusal(t, b.APICall(t, http.MethodPost, orderPath(o1.ID, "/paid"), key, `{"reference":"WIRE-8"}`),
		http.StatusConflict, "", "paid twice")
	requireAPIRefusal(t, b.APICall(t, http.MethodPost, orderPath(unknown, "/paid"), key, `{"reference":"WIRE-8"}`),
		http.StatusNotFound, "", "an unknown order paid")
	requireAPIRefusal(t, b.APICall(t, http.MethodPost, orderPath(o1.ID, "/paid"), key, `{"reference":"WIRE-8","extra":1}`),
		http.StatusBadRequest, "", "an unknown field")
	require.Equal(t, []int64{o1.ID}, list(url.Values{"status": {"paid"}}))

	// Cancelled while pending only.
	r = b.APICall(t, http.MethodPost, orderPath(o2.ID, "/cancel"), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	got = handlerstest.DecodeAs[adminOrderJSON](t, r)
	require.Equal(t, "cancelled", got.Status)
	require.NotNil(t, got.ClosedAt)
	requireAPIRefusal(t, b.APICall(t, http.MethodPost, orderPath(o2.ID, "/cancel"), key, ""), http.StatusConflict, "", "cancelled twice")
	requireAPIRefusal(t, b.APICall(t, http.MethodPost, orderPath(o1.ID, "/cancel"), key, ""), http.StatusConflict, "", "a paid order cancelled")
	requireAPIRefusal(t, b.APICall(t, http.MethodPost, orderPath(unknown, "/cancel"), key, ""), http.StatusNotFound, "", "an unknown order cancelled")

	// Refunded in part, for a reason, never more than was paid.
	refund := func(id, amount int64, reason string) handlerstest.APIResponse {
		return b.APICall(t, http.MethodPost, orderPath(id, "/refund"), key, fmt.Sprintf(`{"amount":%d,"reason":%q}`, amount, reason))
	}
	total := got.Total
	requireAPIRefusal(t, refund(o1.ID, total+1, "too much"), http.StatusUnprocessableEntity, "amount", "more than paid")
	requireAPIRefusal(t, refund(o1.ID, 300, " "), http.StatusUnprocessableEntity, "reason", "no reason")
	r = refund(o1.ID, 300, "goodwill")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	got = handlerstest.DecodeAs[adminOrderJSON](t, r)
	require.Equal(t, int64(300), got.Refunded)
	require.Equal(t, "refund", got.Events[len(got.Events)-1].Kind)
	requireAPIRefusal(t, refund(o1.ID, total-300+1, "the rest and more"), http.StatusUnprocessableEntity, "amount", "more than is left")
	requireAPIRefusal(t, refund(o2.ID, 100, "cancelled"), http.StatusConflict, "", "a cancelled order refunded")
	requireAPIRefusal(t, refund(unknown, 100, "nothing"), http.StatusNotFound, "", "an unknown order refunded")

	events := activityOf(t, b, key, w.AdminEmail)
	org1, org2 := strconv.FormatInt(o1.OrgID, 10), strconv.FormatInt(o2.OrgID, 10)
	requireAudited(t, events, w.AdminActor.UserID, "billing.order_paid", "organization", org1)
	requireAudited(t, events, w.AdminActor.UserID, "billing.order_cancelled", "organization", org2)
	requireAudited(t, events, w.AdminActor.UserID, "billing.order_refund", "organization", org1)
}

// TestAPIAdminSubscriptions: an admin key reads a user's subscription
// (their personal organization's), extends its paid period, ends it and
// puts the user on a plan by hand, each for a reason, with the back
// office's rules; each change audited on the organization with the admin
// as the actor.
func TestAPIAdminSubscriptions(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	w := handlerstest.NewBillingWorld(t, b, "subs-admin")
	key := w.Admin.CreateScopedKey("ops", "admin")
	_, buyer, o := w.Order(t, b, "subs-buyer")
	_, err := w.Billing.MarkPaid(t.Context(), o.ID, "WIRE-1", w.AdminActor)
	require.NoError(t, err)
	_, freeEmail := b.SignedUpUser(t, "subs-free")
	freeID := b.UserID(t, freeEmail)
	subPath := func(id int64, rest string) string {
		return fmt.Sprintf("/api/v1/admin/users/%d/subscription%s", id, rest)
	}
	change := func(id int64, action, body string) handlerstest.APIResponse {
		return b.APICall(t, http.MethodPost, subPath(id, "/"+action), key, body)
	}
	unknown := freeID + 1000

	r := b.APICall(t, http.MethodGet, subPath(buyer.ID, ""), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	sub := handlerstest.DecodeAs[adminSubscriptionJSON](t, r)
	buyerOrg, freeOrg := actingAs(t, b.Pool, buyer.ID).OrgID, actingAs(t, b.Pool, freeID).OrgID
	require.Equal(t, buyerOrg, sub.OrgID)
	require.Equal(t, buyer.Name, sub.OrgName)
	require.Equal(t, w.Plan.ID, sub.PlanID)
	require.Equal(t, w.Plan.Name, sub.Plan)
	require.Equal(t, "active", sub.Status)
	require.Equal(t, "month", sub.Period)
	require.NotNil(t, sub.PeriodEnd)
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, subPath(unknown, ""), key, ""), http.StatusNotFound, "", "an unknown user")

	// Extended by days, for a reason; only a paid period.
	requireAPIRefusal(t, change(buyer.ID, "extend", `{"days":0,"reason":"outage"}`), http.StatusUnprocessableEntity, "days", "no days")
	requireAPIRefusal(t, change(buyer.ID, "extend", `{"days":10,"reason":" "}`), http.StatusUnprocessableEntity, "reason", "no reason")
	r = change(buyer.ID, "extend", `{"days":10,"reason":"outage"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	extended := handlerstest.DecodeAs[adminSubscriptionJSON](t, r)
	require.True(t, sub.PeriodEnd.AddDate(0, 0, 10).Equal(*extended.PeriodEnd), "%s, then %s", sub.PeriodEnd, extended.PeriodEnd)
	requireAPIRefusal(t, change(freeID, "extend", `{"days":10,"reason":"outage"}`), http.StatusConflict, "", "no paid period")
	requireAPIRefusal(t, change(unknown, "extend", `{"days":10,"reason":"outage"}`), http.StatusNotFound, "", "an unknown user's")

	// Ended at once: the default plan, cancelled.
	requireAPIRefusal(t, change(buyer.ID, "cancel", `{"reason":""}`), http.StatusUnprocessableEntity, "reason", "no reason")
	r = change(buyer.ID, "cancel", `{"reason":"abuse"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	sub = handlerstest.DecodeAs[adminSubscriptionJSON](t, r)
	require.Equal(t, "cancelled", sub.Status)
	require.Equal(t, "free", sub.Plan)
	require.Nil(t, sub.PeriodEnd)
	requireAPIRefusal(t, change(unknown, "cancel", `{"reason":"abuse"}`), http.StatusNotFound, "", "an unknown user's")

	// A plan by hand, with no period end.
	requireAPIRefusal(t, change(freeID, "plan", fmt.Sprintf(`{"plan_id":%d,"reason":"gift"}`, w.Plan.ID+1000)),
		http.StatusUnprocessableEntity, "plan_id", "an unknown plan")
	r = change(freeID, "plan", fmt.Sprintf(`{"plan_id":%d,"reason":"gift"}`, w.Plan.ID))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	sub = handlerstest.DecodeAs[adminSubscriptionJSON](t, r)
	require.Equal(t, w.Plan.ID, sub.PlanID)
	require.Equal(t, "active", sub.Status)
	require.Nil(t, sub.PeriodEnd)
	requireAPIRefusal(t, change(unknown, "plan", fmt.Sprintf(`{"plan_id":%d,"reason":"gift"}`, w.Plan.ID)), http.StatusNotFound, "", "an unknown user's")

	events := activityOf(t, b, key, w.AdminEmail)
	requireAudited(t, events, w.AdminActor.UserID, "billing.admin_extend", "organization", strconv.FormatInt(buyerOrg, 10))
	requireAudited(t, events, w.AdminActor.UserID, "billing.admin_cancel", "organization", strconv.FormatInt(buyerOrg, 10))
	e := requireAudited(t, events, w.AdminActor.UserID, "billing.admin_set_plan", "organization", strconv.FormatInt(freeOrg, 10))
	require.Equal(t, "gift", e.Details["reason"])
}

// adminPlanJSON is a plan as the admin API shows it.
type adminPlanJSON struct {
	ID                     int64    `json:"id"`
	Name                   string   `json:"name"`
	Default                bool     `json:"default"`
	MaxClusters            int      `json:"max_clusters"`
	MaxNodesPerCluster     int      `json:"max_nodes_per_cluster"`
	MaxHostnamesPerCluster int      `json:"max_hostnames_per_cluster"`
	ManagedIngress         bool     `json:"managed_ingress"`
	Currency               string   `json:"currency"`
	Free                   bool     `json:"free"`
	PriceMonthly           *int64   `json:"price_monthly"`
	PriceYearly            *int64   `json:"price_yearly"`
	NameZh                 string   `json:"name_zh"`
	Public                 bool     `json:"public"`
	Backends               []string `json:"backends"`
	ArchivedAt             *string  `json:"archived_at"`
	UsersOverLimits        *int64   `json:"users_over_limits"`
}

// TestAPIAdminPlans: an admin key lists the plans a page at a time,
// creates one from the back office's defaults, changes only the fields a
// PATCH names, archives, brings back and makes a plan the default, with
// the back office's rules (field errors 422, the default never archived
// and an archived plan never the default: 409); each action audited with
// the admin as the actor.
func TestAPIAdminPlans(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, adminEmail := b.SignedUpAdmin(t, "plans-admin")
	adminID := b.UserID(t, adminEmail)
	key := admin.CreateScopedKey("ops", "admin")
	call := func(method, path, body string) handlerstest.APIResponse {
		return b.APICall(t, method, "/api/v1/admin/plans"+path, key, body)
	}

	plans := adminPages[adminPlanJSON](t, b, key, "/api/v1/admin/plans", "plans", nil)
	require.Len(t, plans, 1)
	free := plans[0]
	require.True(t, free.Default)
	require.Nil(t, free.UsersOverLimits, "not in lists")

	// Created from the back office's defaults.
	r := call(http.MethodPost, "", `{"name":"Team","name_zh":"团队","currency":"EUR","price_monthly":1500,"backends":["vcluster"]}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	team := handlerstest.DecodeAs[adminPlanJSON](t, r)
	require.Equal(t, fmt.Sprintf("/api/v1/admin/plans/%d", team.ID), r.Header.Get("Location"))
	require.Equal(t, 3, team.MaxClusters)
	require.Equal(t, 10, team.MaxNodesPerCluster)
	require.True(t, team.ManagedIngress)
	require.True(t, team.Public)
	require.False(t, team.Default)
	require.Equal(t, int64(1500), *team.PriceMonthly)
	require.Nil(t, team.PriceYearly)
	require.Equal(t, []string{"vcluster"}, team.Backends)
	require.Equal(t, int64(0), *team.UsersOverLimits)
	r = b.APICall(t, http.MethodGet, r.Header.Get("Location"), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, team, handlerstest.DecodeAs[adminPlanJSON](t, r))

	for _, tt := range []struct{ body, field string }{
		{`{"name":"Team","price_monthly":100}`, "name"},
		{`{"name":"Unpriced"}`, "price_monthly"},
		{`{"name":"Odd","free":true,"price_monthly":100}`, "price_monthly"},
		{`{"name":"Zero","price_yearly":0}`, "price_yearly"},
		{`{"name":"Huge","max_clusters":-1,"free":true}`, "max_clusters"},
		{`{"name":"Coins","currency":"XYZ","free":true}`, "currency"},
		{`{"name":"Elsewhere","free":true,"backends":["k3s"]}`, "backends"},
	} {
		requireAPIRefusal(t, call(http.MethodPost, "", tt.body), http.StatusUnprocessableEntity, tt.field, tt.body)
	}
	requireAPIRefusal(t, call(http.MethodPost, "", `{"name":"Extra","free":true,"colour":"red"}`), http.StatusBadRequest, "", "an unknown field")
	requireAPIRefusal(t, call(http.MethodPost, "", `{"name":"Frac","price_monthly":9.5}`), http.StatusBadRequest, "", "a fractional price")

	// PATCH changes what it names and keeps the rest; null takes a price
	// off sale.
	teamPath := fmt.Sprintf("/%d", team.ID)
	r = call(http.MethodPatch, teamPath, `{"max_clusters":5,"price_yearly":15000}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	patched := handlerstest.DecodeAs[adminPlanJSON](t, r)
	require.Equal(t, 5, patched.MaxClusters)
	require.Equal(t, int64(15000), *patched.PriceYearly)
	require.Equal(t, int64(1500), *patched.PriceMonthly)
	require.Equal(t, "团队", patched.NameZh)
	require.Equal(t, "EUR", patched.Currency)
	r = call(http.MethodPatch, teamPath, `{"price_monthly":null}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	patched = handlerstest.DecodeAs[adminPlanJSON](t, r)
	require.Nil(t, patched.PriceMonthly)
	require.Equal(t, int64(15000), *patched.PriceYearly)
	requireAPIRefusal(t, call(http.MethodPatch, teamPath, `{"price_yearly":null}`), http.StatusUnprocessableEntity, "price_monthly", "no price left")
	requireAPIRefusal(t, call(http.MethodPatch, teamPath, `{"name":"free"}`), http.StatusUnprocessableEntity, "name", "a name taken")
	requireAPIRefusal(t, call(http.MethodPatch, "/999999", `{"max_clusters":5}`), http.StatusNotFound, "", "an unknown plan")

	// Archived and back; the default never archived, an archived plan
	// never the default.
	action := func(id int64, a string) handlerstest.APIResponse {
		return call(http.MethodPost, fmt.Sprintf("/%d/%s", id, a), "")
	}
	requireAPIRefusal(t, action(free.ID, "archive"), http.StatusConflict, "", "the default archived")
	r = action(team.ID, "archive")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.NotNil(t, handlerstest.DecodeAs[adminPlanJSON](t, r).ArchivedAt)
	requireAPIRefusal(t, action(team.ID, "default"), http.StatusConflict, "", "an archived plan the default")
	r = action(team.ID, "unarchive")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Nil(t, handlerstest.DecodeAs[adminPlanJSON](t, r).ArchivedAt)
	r = action(team.ID, "default")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.True(t, handlerstest.DecodeAs[adminPlanJSON](t, r).Default)
	r = call(http.MethodGet, fmt.Sprintf("/%d", free.ID), "")
	require.False(t, handlerstest.DecodeAs[adminPlanJSON](t, r).Default, "one default")
	for _, a := range []string{"archive", "unarchive", "default"} {
		requireAPIRefusal(t, action(999999, a), http.StatusNotFound, "", a)
	}
	requireAPIRefusal(t, call(http.MethodGet, "/999999", ""), http.StatusNotFound, "", "an unknown plan")

	// Both plans, a page at a time, in id order.
	plans = adminPages[adminPlanJSON](t, b, key, "/api/v1/admin/plans", "plans", nil)
	require.Len(t, plans, 2)
	require.Equal(t, []int64{free.ID, team.ID}, []int64{plans[0].ID, plans[1].ID})

	events := activityOf(t, b, key, adminEmail)
	target := strconv.FormatInt(team.ID, 10)
	for _, a := range []string{"create", "update", "archive", "unarchive", "default"} {
		requireAudited(t, events, adminID, "admin.plan_"+a, "plan", target)
	}
}
