package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestBillingTeamRoles: in a team's organization the plan page is the
// team's; its owner orders, in the console and in the API, for the team
// (the order is the team's, placed by the owner; paid, the team's plan
// changes and the owner's personal one does not), and reads its orders
// and receipts. Its admin, member and viewer read the plan with no form
// to act on it, and are refused (403, a JSON error in the API) ordering,
// cancelling, paying and the orders; a member of another organization
// sees their own plan and finds none of the team's orders (404).
func TestBillingTeamRoles(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	svc, admin, plan := b.ShopOpen(t)
	tm := newOrgTeam(t, b, "billco")
	order := fmt.Sprintf(`{"plan_id":%d,"period":"month","method":"manual"}`, plan)

	// The owner orders in the API: the team's order, placed by them.
	r := b.APICall(t, http.MethodPost, "/api/v1/orders", tm.keys["owner"], order)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	var orderID, orgID, placedBy int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id, org_id, user_id FROM orders WHERE status = 'pending'`).Scan(&orderID, &orgID, &placedBy))
	require.Equal(t, tm.orgID, orgID)
	var ownerID int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT user_id FROM organization_members WHERE org_id = $1 AND role = 'owner'`, tm.orgID).Scan(&ownerID))
	require.Equal(t, ownerID, placedBy)
	orderPath := fmt.Sprintf("/billing/orders/%d", orderID)
	apiOrderPath := fmt.Sprintf("/api/v1/orders/%d", orderID)

	for _, role := range []string{"admin", "member", "viewer"} {
		t.Run(role, func(t *testing.T) {
			c, key := tm.clients[role], tm.keys[role]
			code, body := c.Get("/billing")
			require.Equal(t, http.StatusOK, code)
			require.Contains(t, body, `data-testid="billing-org"`)
			require.Contains(t, body, "billco")
			require.Contains(t, body, `data-testid="billing-owners-only"`)
			for _, offer := range []string{"billing-choose-form", "billing-pending", "billing-cancel", "billing-orders", "billing-no-orders"} {
				require.NotContains(t, body, `data-testid="`+offer+`"`, "no %s for a %s", offer, role)
			}

			// The console's forms, were they posted anyway.
			resp := c.Post("/billing", "/billing/orders", url.Values{"plan_id": {fmt.Sprint(plan)}, "period": {"month"}, "method": {"manual"}})
			require.Equal(t, http.StatusForbidden, resp.StatusCode)
			for _, path := range []string{orderPath + "/cancel", orderPath + "/checkout", "/billing/cancel"} {
				resp := c.Post("/billing", path, nil)
				require.Equal(t, http.StatusForbidden, resp.StatusCode, path)
			}
			code, body = c.Get(orderPath)
			require.Equal(t, http.StatusForbidden, code)
			require.Contains(t, body, `data-testid="error-page"`)
			require.Contains(t, body, `data-testid="error-sign-in-other"`, "a 403 offers signing in as someone else")

			// The API: the plan reads, the rest is a JSON 403.
			r := b.APICall(t, http.MethodGet, "/api/v1/billing", key, "")
			require.Equal(t, http.StatusOK, r.Status, r.Body)
			for _, call := range []struct{ method, path, body string }{
				{http.MethodPost, "/api/v1/orders", order},
				{http.MethodGet, "/api/v1/orders", ""},
				{http.MethodGet, apiOrderPath, ""},
				{http.MethodPost, apiOrderPath + "/cancel", ""},
				{http.MethodPost, apiOrderPath + "/checkout", ""},
				{http.MethodPost, "/api/v1/billing/cancel", ""},
			} {
				r := b.APICall(t, call.method, call.path, key, call.body)
				requireAPIRefusal(t, r, http.StatusForbidden, "", call.method+" "+call.path+" as "+role)
			}
		})
	}
	var orders int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE org_id = $1 AND status = 'pending'`, tm.orgID).Scan(&orders))
	require.Equal(t, 1, orders, "nothing ordered or cancelled by the others")

	// Another organization's member: their own plan page, and the team's
	// order is not found.
	code, body := tm.clients["other"].Get("/billing")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, `data-testid="billing-org"`, "not the team's plan")
	require.NotRegexp(t, `[^-]billco[^-]`, body, "nothing of the team's (the menu names their own organization, billco-other)")
	require.Contains(t, body, `data-testid="billing-no-orders"`, "their personal organization's, which they own")
	code, _ = tm.clients["other"].Get(orderPath)
	require.Equal(t, http.StatusNotFound, code)
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, apiOrderPath, tm.keys["other"], ""), http.StatusNotFound, "", "another organization's order")

	// The owner's page offers it all; paid, the plan is the team's.
	code, body = tm.clients["owner"].Get("/billing")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "billco")
	require.NotContains(t, body, `data-testid="billing-owners-only"`)
	require.Contains(t, body, `data-testid="billing-choose-form"`)
	require.Contains(t, body, `data-testid="billing-pending"`)
	_, err := svc.MarkPaid(ctx, orderID, "WIRE-TEAM", admin)
	require.NoError(t, err)
	_, body = tm.clients["member"].Get("/billing")
	require.Contains(t, body, `data-testid="billing-plan-name">Team<`)
	r = b.APICall(t, http.MethodGet, "/api/v1/billing", tm.keys["viewer"], "")
	require.Contains(t, r.Body, `"name":"Team"`)
	var personalPlan string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT p.name FROM subscriptions s JOIN plans p ON p.id = s.plan_id
		JOIN organizations o ON o.id = s.org_id WHERE o.personal_of = $1`, ownerID).Scan(&personalPlan))
	require.Equal(t, "free", personalPlan, "the owner's personal plan is unchanged")
	code, body = tm.clients["owner"].Get(orderPath + "/receipt")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="billing-receipt-org">billco<`)
	r = b.APICall(t, http.MethodGet, "/api/v1/orders", tm.keys["owner"], "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"status":"paid"`)

	// The owner's console order for the team, at the period's end a
	// renewal.
	resp := tm.clients["owner"].Post("/billing", "/billing/orders", url.Values{"plan_id": {fmt.Sprint(plan)}, "period": {"month"}, "method": {"manual"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE org_id = $1 AND kind = 'renewal'`, tm.orgID).Scan(&orders))
	require.Equal(t, 1, orders)
}
