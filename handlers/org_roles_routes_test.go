package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/orgs"
)

// access is what a route asks of its caller, one kind of row of the role
// table.
type access int

const (
	// open: anyone, signed in or not. Not the organization's: the route
	// is public, or authenticates with something of its own (why says
	// what). Nobody gets a 5xx.
	open access = iota
	// edgeToken: an edge token only (`kubebyon edge`): every caller here is
	// refused (401), with an API key or without.
	edgeToken
	// own: the signed-in user's own account. Anonymous is sent to sign in
	// (console) or refused (API, 401). With object, the path names
	// something of the owner's: every other user finds nothing (404).
	own
	// inOrg: the organization in the path (the team's), needing perm:
	// its members lacking perm get 403, those having it neither 403 nor
	// 5xx, a user of another organization 404 (and not its name).
	inOrg
	// acting: the organization the caller works in (the console's, the
	// key's), needing perm; for the team's members as inOrg. A user of
	// another organization works in their own, of which they are the
	// owner, and sees nothing of the team's; with object, the path names
	// something of the team's, which they do not find (404).
	acting
	// cluster: a cluster's route, TestOrgRolesOnClusterRoutes' table.
	cluster
	// platformAdmin: the platform's admins only (requireAdmin,
	// requireAdminKey): every member of an organization is refused, as is
	// anonymous.
	platformAdmin
)

// routeRow is how the role table tries a route, and what it expects.
type routeRow struct {
	access access
	perm   orgs.Permission
	object bool
	// why a route that is open or the edge's is not an organization's.
	why string
	// body is what is posted: a form (console) or JSON (API); none
	// posts an empty form or "{}".
	body string
	// throwaway: the route leaves or deletes the organization in its
	// path: it is tried on a copy of the team's organization, with the
	// same members in the same roles, made for each caller.
	throwaway bool
	// last: the route changes its caller (signing out): tried after every
	// other.
	last bool
	// ownEmail: the answer shows the caller's own email address (an own
	// route's, each user's own account).
	ownEmail bool
	// anonymous is what anonymous gets, when it is not the sign-in page
	// (console) or 401 (API).
	anonymous int
}

// routeRows classifies every route of the server but a cluster's and the
// admin area's (routeRowFor). A route without a row fails the table:
// adding a route means adding its line here, e.g. for a route that
// deletes the organization (tried on a copy of it for each caller):
//
//	"POST /orgs/:id/delete": {access: inOrg, perm: orgs.DeleteOrganization, throwaway: true},
func routeRows(plan int64) map[string]routeRow {
	const (
		anyone = "public page, or its own token"
	)
	order := fmt.Sprintf(`{"plan_id":%d,"period":"month","method":"manual"}`, plan)
	orderForm := fmt.Sprintf("plan_id=%d&period=month&method=manual", plan)
	hook := `{"name":"api-hook","kind":"slack","url":"https://hooks.slack.com/services/api"}`
	hookForm := "name=form-hook&kind=slack&url=https%3A%2F%2Fhooks.slack.com%2Fservices%2Fform"
	invite := `{"email":"invited-api@example.com","role":"viewer"}`
	inviteForm := "email=invited-form%40example.com&role=viewer"
	return map[string]routeRow{
		// Probes, files, the public pages, signing up and in.
		"GET /healthz":                       {access: open, why: "probe"},
		"GET /readyz":                        {access: open, why: "probe"},
		"GET /static/*":                      {access: open, why: "static files"},
		"HEAD /static/*":                     {access: open, why: "static files"},
		"GET /favicon.ico":                   {access: open, why: "static files"},
		"HEAD /favicon.ico":                  {access: open, why: "static files"},
		"GET /":                              {access: open, why: "the landing page; signed in, the dashboard of the organization one works in"},
		"GET /status":                        {access: open, why: "the platform's status"},
		"GET /branding/logo":                 {access: open, why: "the admins' logo"},
		"GET /signup":                        {access: open, why: anyone},
		"POST /signup":                       {access: open, why: anyone},
		"GET /signup/verify":                 {access: open, why: anyone},
		"POST /signup/verify":                {access: open, why: anyone},
		"POST /signup/resend":                {access: open, why: anyone},
		"GET /login":                         {access: open, why: anyone},
		"POST /login":                        {access: open, why: anyone},
		"POST /logout":                       {access: open, why: "signs out whoever asks", last: true},
		"GET /password/reset":                {access: open, why: anyone},
		"POST /password/reset":               {access: open, why: anyone},
		"GET /password/reset/confirm":        {access: open, why: "the mailed token"},
		"POST /password/reset/confirm":       {access: open, why: "the mailed token"},
		"GET /auth/link":                     {access: open, why: "the pending sign-in in the session"},
		"POST /auth/link":                    {access: open, why: "the pending sign-in in the session"},
		"GET /auth/:provider":                {access: open, why: "OAuth"},
		"GET /auth/:provider/callback":       {access: open, why: "OAuth"},
		"GET /join/:token":                   {access: open, why: "the join token in the path"},
		"POST /join/:token/events":           {access: open, why: "the join token in the path"},
		"POST /webhooks/node-quota/:id/:key": {access: open, why: "the cluster's key in the path"},
		"POST /webhooks/stripe":              {access: open, why: "Stripe's signature"},
		"GET /api/v1/openapi.json":           {access: open, why: "the API's description"},
		"GET /api/reference":                 {access: open, why: "the API's description"},
		"GET /api/v1/edge/config":            {access: edgeToken, why: "edge token"},
		"POST /api/v1/edge/status":           {access: edgeToken, why: "edge token"},
		"GET /api/v1/edge/routes":            {access: edgeToken, why: "edge token"},
		"POST /api/v1/edge/routes/status":    {access: edgeToken, why: "edge token"},

		// The user's account: settings, keys, inbox, organizations.
		"GET /settings/profile":                   {access: own, ownEmail: true},
		"POST /settings/profile":                  {access: own},
		"POST /settings/email":                    {access: own},
		"POST /settings/email/confirm":            {access: own},
		"POST /settings/email/resend":             {access: own},
		"POST /settings/email/cancel":             {access: own},
		"POST /settings/password":                 {access: own},
		"POST /settings/avatar":                   {access: own},
		"POST /settings/avatar/remove":            {access: own},
		"GET /settings/sign-in":                   {access: own},
		"POST /settings/sign-in/:identity/unlink": {access: own},
		"POST /settings/language":                 {access: own},
		"POST /settings/sessions/:session/end":    {access: own},
		"POST /settings/sessions/end-others":      {access: own},
		"POST /settings/notifications":            {access: own},
		"GET /avatars/:id":                        {access: own, object: true, anonymous: http.StatusNotFound},
		"GET /settings/api-keys":                  {access: own},
		"POST /settings/api-keys":                 {access: own},
		"GET /settings/api-keys/:id/revoke":       {access: own, object: true},
		"POST /settings/api-keys/:id/revoke":      {access: own, object: true},
		"GET /orgs":                               {access: own},
		"POST /orgs":                              {access: own},
		"GET /orgs/invitations/:token":            {access: own},
		"POST /orgs/invitations/:token/accept":    {access: own},
		"GET /notifications":                      {access: own},
		"POST /notifications/read":                {access: own},
		"GET /api/v1/me":                          {access: own, ownEmail: true},
		"PATCH /api/v1/me":                        {access: own},
		"PUT /api/v1/me/password":                 {access: own},
		"GET /api/v1/me/email-change":             {access: own},
		"POST /api/v1/me/email-change":            {access: own},
		"DELETE /api/v1/me/email-change":          {access: own},
		"POST /api/v1/me/email-change/confirm":    {access: own},
		"POST /api/v1/me/email-change/resend":     {access: own},
		"PUT /api/v1/me/avatar":                   {access: own},
		"DELETE /api/v1/me/avatar":                {access: own},
		"GET /api/v1/me/identities":               {access: own},
		"DELETE /api/v1/me/identities/:id":        {access: own},
		"GET /api/v1/notifications":               {access: own},
		"POST /api/v1/notifications/read":         {access: own},
		"GET /api/v1/notification-settings":       {access: own},
		"PATCH /api/v1/notification-settings":     {access: own},
		"GET /api/v1/api-keys":                    {access: own},
		"POST /api/v1/api-keys":                   {access: own},
		"GET /api/v1/api-keys/:apiKey":            {access: own, object: true},
		"DELETE /api/v1/api-keys/:apiKey":         {access: own, object: true},
		"GET /api/v1/organizations":               {access: own},
		"POST /api/v1/organizations":              {access: own},

		// The organization in the path.
		"GET /orgs/:id":                                               {access: inOrg, perm: orgs.Read},
		"POST /orgs/:id/switch":                                       {access: inOrg, perm: orgs.Read},
		"GET /orgs/:id/leave":                                         {access: inOrg, perm: orgs.Read},
		"POST /orgs/:id/leave":                                        {access: inOrg, perm: orgs.Read, throwaway: true},
		"GET /orgs/:id/delete":                                        {access: inOrg, perm: orgs.DeleteOrganization},
		"POST /orgs/:id/delete":                                       {access: inOrg, perm: orgs.DeleteOrganization, throwaway: true, body: "confirm=" + url.QueryEscape(teamName+" copy")},
		"DELETE /api/v1/organizations/:id":                            {access: inOrg, perm: orgs.DeleteOrganization, throwaway: true},
		"POST /orgs/:id/settings":                                     {access: inOrg, perm: orgs.ViewerKubeconfig, body: "viewer_kubeconfig=on"},
		"POST /orgs/:id/members/:user/role":                           {access: inOrg, perm: orgs.ManageMembers, body: "role=member"},
		"GET /orgs/:id/members/:user/remove":                          {access: inOrg, perm: orgs.ManageMembers},
		"POST /orgs/:id/members/:user/remove":                         {access: inOrg, perm: orgs.ManageMembers},
		"POST /orgs/:id/invitations":                                  {access: inOrg, perm: orgs.ManageMembers, body: inviteForm},
		"POST /orgs/:id/invitations/:inv/revoke":                      {access: inOrg, perm: orgs.ManageMembers},
		"GET /api/v1/organizations/:id":                               {access: inOrg, perm: orgs.Read},
		"PATCH /api/v1/organizations/:id":                             {access: inOrg, perm: orgs.Rename, body: `{"name":"` + teamName + `"}`},
		"GET /api/v1/organizations/:id/members":                       {access: inOrg, perm: orgs.Read},
		"GET /api/v1/organizations/:id/members/:user_id":              {access: inOrg, perm: orgs.Read},
		"PATCH /api/v1/organizations/:id/members/:user_id":            {access: inOrg, perm: orgs.ManageMembers, body: `{"role":"member"}`},
		"DELETE /api/v1/organizations/:id/members/:user_id":           {access: inOrg, perm: orgs.ManageMembers},
		"GET /api/v1/organizations/:id/invitations":                   {access: inOrg, perm: orgs.Read},
		"POST /api/v1/organizations/:id/invitations":                  {access: inOrg, perm: orgs.ManageMembers, body: invite},
		"GET /api/v1/organizations/:id/invitations/:invitation_id":    {access: inOrg, perm: orgs.Read},
		"DELETE /api/v1/organizations/:id/invitations/:invitation_id": {access: inOrg, perm: orgs.ManageMembers},

		// The organization the caller works in: home, clusters, billing,
		// webhooks.
		"GET /clusters":                                  {access: acting, perm: orgs.Read},
		"GET /clusters/new":                              {access: acting, perm: orgs.Operate},
		"POST /clusters":                                 {access: acting, perm: orgs.Operate},
		"GET /api/v1/clusters":                           {access: acting, perm: orgs.Read},
		"POST /api/v1/clusters":                          {access: acting, perm: orgs.Operate},
		"GET /billing":                                   {access: acting, perm: orgs.Read},
		"POST /billing/orders":                           {access: acting, perm: orgs.Billing, body: orderForm},
		"GET /billing/orders/:id":                        {access: acting, perm: orgs.Billing, object: true},
		"GET /billing/orders/:id/receipt":                {access: acting, perm: orgs.Billing, object: true},
		"POST /billing/orders/:id/cancel":                {access: acting, perm: orgs.Billing, object: true},
		"POST /billing/orders/:id/checkout":              {access: acting, perm: orgs.Billing, object: true},
		"POST /billing/cancel":                           {access: acting, perm: orgs.Billing},
		"POST /billing/resume":                           {access: acting, perm: orgs.Billing},
		"GET /api/v1/billing":                            {access: acting, perm: orgs.Read},
		"GET /api/v1/plans":                              {access: acting, perm: orgs.Read},
		"GET /api/v1/orders":                             {access: acting, perm: orgs.Billing},
		"POST /api/v1/orders":                            {access: acting, perm: orgs.Billing, body: order},
		"GET /api/v1/orders/:id":                         {access: acting, perm: orgs.Billing, object: true},
		"POST /api/v1/orders/:id/cancel":                 {access: acting, perm: orgs.Billing, object: true},
		"POST /api/v1/orders/:id/checkout":               {access: acting, perm: orgs.Billing, object: true},
		"POST /api/v1/billing/cancel":                    {access: acting, perm: orgs.Billing},
		"POST /api/v1/billing/resume":                    {access: acting, perm: orgs.Billing},
		"GET /settings/notifications":                    {access: acting, perm: orgs.Read},
		"POST /settings/notifications/webhooks":          {access: acting, perm: orgs.ManageWebhooks, body: hookForm},
		"POST /settings/notifications/webhooks/:id/test": {access: acting, perm: orgs.ManageWebhooks, object: true},
		"POST /settings/notifications/webhooks/:id/delete": {
			access: acting, perm: orgs.ManageWebhooks, object: true},
		"GET /api/v1/webhooks":           {access: acting, perm: orgs.Read},
		"POST /api/v1/webhooks":          {access: acting, perm: orgs.ManageWebhooks, body: hook},
		"GET /api/v1/webhooks/:id":       {access: acting, perm: orgs.Read, object: true},
		"POST /api/v1/webhooks/:id/test": {access: acting, perm: orgs.ManageWebhooks, object: true},
		"DELETE /api/v1/webhooks/:id":    {access: acting, perm: orgs.ManageWebhooks, object: true},

		// Two-factor authentication (two_factor_sign_in.go, two_factor.go).
		"GET /sign-in/two-factor":                    {access: open, why: "the pending sign-in in the session"},
		"POST /sign-in/two-factor":                   {access: open, why: "the pending sign-in in the session"},
		"GET /settings/security":                     {access: own},
		"GET /settings/security/two-factor":          {access: own},
		"POST /settings/security/two-factor":         {access: own},
		"POST /settings/security/two-factor/disable": {access: own},
		"POST /settings/security/recovery-codes":     {access: own},
	}
}

// teamName is the name of the role table's organization, which no
// outsider may read.
const teamName = "Quokka Works"

// routeRowFor is the row of a route: a cluster's and the admin area's by
// their prefix, the others from rows.
func routeRowFor(rows map[string]routeRow, method, path string) (routeRow, bool) {
	switch {
	case strings.HasPrefix(path, "/clusters/:id"), strings.HasPrefix(path, "/api/v1/clusters/:id"):
		return routeRow{access: cluster}, true
	case path == "/admin" || strings.HasPrefix(path, "/admin/"), strings.HasPrefix(path, "/api/v1/admin/"):
		return routeRow{access: platformAdmin}, true
	}
	r, ok := rows[method+" "+path]
	return r, ok
}

// tableFixture is what the routes' parameters name: the team's objects,
// and the owner's.
type tableFixture struct {
	orgID, spareID, invitationID, orderID, cancelOrderID, webhookID, cancelWebhookID int64
	ownerID, ownerKeyID                                                              int64
}

// path fills a route's parameters: :id is the object of the route's
// area; a parameter naming nothing of the team's gets a value that names
// nothing at all.
func (f tableFixture) path(method, route string) string {
	id := "999999999"
	switch {
	case strings.HasPrefix(route, "/orgs/:id"), strings.HasPrefix(route, "/api/v1/organizations/:id"):
		id = fmt.Sprint(f.orgID)
	case strings.HasPrefix(route, "/billing/orders/:id/cancel"), strings.HasPrefix(route, "/api/v1/orders/:id/cancel"):
		id = fmt.Sprint(f.cancelOrderID)
	case strings.HasPrefix(route, "/billing/orders/:id"), strings.HasPrefix(route, "/api/v1/orders/:id"):
		id = fmt.Sprint(f.orderID)
	case strings.HasSuffix(route, "/delete") && strings.HasPrefix(route, "/settings/notifications/webhooks/:id"),
		method == http.MethodDelete && route == "/api/v1/webhooks/:id":
		id = fmt.Sprint(f.cancelWebhookID)
	case strings.HasPrefix(route, "/settings/notifications/webhooks/:id"), strings.HasPrefix(route, "/api/v1/webhooks/:id"):
		id = fmt.Sprint(f.webhookID)
	case strings.HasPrefix(route, "/settings/api-keys/:id"):
		id = fmt.Sprint(f.ownerKeyID)
	case route == "/avatars/:id":
		id = fmt.Sprint(f.ownerID)
	}
	params := map[string]string{
		":id": id, ":user": fmt.Sprint(f.spareID), ":user_id": fmt.Sprint(f.spareID),
		":inv": fmt.Sprint(f.invitationID), ":invitation_id": fmt.Sprint(f.invitationID),
		":apiKey": fmt.Sprint(f.ownerKeyID), ":token": "no-such-token", ":provider": "github",
		":identity": "999999999", ":key": "no-such-key", "*": "no-such-file.css",
	}
	parts := strings.Split(route, "/")
	for i, p := range parts {
		if v, ok := params[p]; ok {
			parts[i] = v
		}
	}
	return strings.Join(parts, "/")
}

// TestOrgRolesOnEveryRoute is the role table over every route of the
// server and the API, for the owner, an admin, a member and a viewer of
// an organization, a user of another organization, and anonymous: what
// is the organization's is refused to the roles that may not (403), and
// not found by an outsider (404); what is the account's is each user's
// own; the admin area is no one's here; the rest is public, or
// authenticated with a token of its own. A route the table does not
// classify fails it. The routes of a cluster are TestOrgRolesOnClusterRoutes'.
func TestOrgRolesOnEveryRoute(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	_, _, plan := b.ShopOpen(t)
	admin, _ := b.SignedUpAdmin(t, "table-admin")
	resp := admin.Post("/admin/notifications", "/admin/notifications/network", url.Values{"allowedCIDRs": {"127.0.0.1/32"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	hooks, _ := handlerstest.HookServer(t, "")

	tm := newOrgTeam(t, b, "tbl")
	_, err := b.Pool.Exec(ctx, "UPDATE organizations SET name = $2 WHERE id = $1", tm.orgID, teamName)
	require.NoError(t, err)
	f := tableFixture{orgID: tm.orgID, ownerID: b.UserID(t, tm.emails["owner"])}
	f.spareID = insertOrgUser(t, b, tm.orgID, "member")
	ownerKey := tm.clients["owner"].CreateScopedKey("spare", "write")
	f.ownerKeyID = b.KeyID(t, ownerKey)
	api := func(method, path, key, body string) handlerstest.APIResponse {
		t.Helper()
		r := b.APICall(t, method, path, key, body)
		require.Less(t, r.Status, 300, "%s %s: %s", method, path, r.Body)
		return r
	}
	r := api(http.MethodPost, fmt.Sprintf("/api/v1/organizations/%d/invitations", tm.orgID), tm.keys["owner"],
		`{"email":"kept-pending@example.com","role":"viewer"}`)
	f.invitationID = handlerstest.DecodeAs[struct{ ID int64 }](t, r).ID
	order := fmt.Sprintf(`{"plan_id":%d,"period":"month","method":"manual"}`, plan)
	f.orderID = handlerstest.DecodeAs[apiChoiceJSON](t, api(http.MethodPost, "/api/v1/orders", tm.keys["owner"], order)).Order.ID
	f.cancelOrderID = f.orderID
	addHook := func(name string) int64 {
		r := api(http.MethodPost, "/api/v1/webhooks", tm.keys["owner"], `{"name":"`+name+`","kind":"generic","url":"`+hooks.URL+`/`+name+`"}`)
		return handlerstest.DecodeAs[struct{ ID int64 }](t, r).ID
	}
	f.webhookID, f.cancelWebhookID = addHook("kept"), addHook("removed")

	// prep puts back, before each caller, what the one before may have
	// removed: the spare member, the pending invitation, the webhook; and
	// forgets the failed API keys of the address, which anonymous and the
	// edge's routes count (429 after 50).
	prep := func(method, route string) {
		_, err := b.Pool.Exec(ctx, "DELETE FROM rate_limits WHERE key LIKE 'api-auth-fail-ip:%'")
		require.NoError(t, err)
		switch {
		case route == "/settings/notifications/webhooks/:id/delete", method == http.MethodDelete && route == "/api/v1/webhooks/:id":
			var kept bool
			require.NoError(t, b.Pool.QueryRow(ctx, "SELECT EXISTS (SELECT FROM webhook_channels WHERE id = $1)", f.cancelWebhookID).Scan(&kept))
			if !kept {
				f.cancelWebhookID = addHook("removed")
			}
		case strings.Contains(route, "/members/:user"):
			_, err := b.Pool.Exec(ctx, `INSERT INTO organization_members (org_id, user_id, role) VALUES ($1, $2, 'member')
				ON CONFLICT (org_id, user_id) DO UPDATE SET role = 'member'`, f.orgID, f.spareID)
			require.NoError(t, err)
		case strings.Contains(route, "/invitations/:inv"):
			_, err := b.Pool.Exec(ctx, "UPDATE org_invitations SET revoked_at = NULL WHERE id = $1", f.invitationID)
			require.NoError(t, err)
		}
	}

	// copyOrg is a new organization with the team's members in their
	// roles, named so that an outsider reading it would be caught.
	copyOrg := func() int64 {
		var id int64
		require.NoError(t, b.Pool.QueryRow(ctx, "INSERT INTO organizations (name, created_by) VALUES ($1, $2) RETURNING id",
			teamName+" copy", f.ownerID).Scan(&id))
		_, err := b.Pool.Exec(ctx, `INSERT INTO organization_members (org_id, user_id, role)
			SELECT $2, user_id, role FROM organization_members WHERE org_id = $1`, f.orgID, id)
		require.NoError(t, err)
		return id
	}

	anonymous := b.Client(t)
	roles := append(slices.Clone(teamRoles), "anonymous")
	rows := routeRows(plan)
	type tried struct {
		route echo.Route
		row   routeRow
	}
	var now, later []tried
	seen := map[string]bool{}
	clusterRoutes, adminRoutes := 0, 0
	for _, route := range b.Echo.Routes() {
		name := route.Method + " " + route.Path
		if route.Method == echo.RouteNotFound {
			continue // a group's answer to a path it does not have: 404 (or sign in first)
		}
		row, ok := routeRowFor(rows, route.Method, route.Path)
		require.True(t, ok, "%s is not in the role table: add its row to routeRows", name)
		seen[name] = true
		switch {
		case row.access == cluster:
			clusterRoutes++ // TestOrgRolesOnClusterRoutes
		case row.last:
			later = append(later, tried{*route, row})
		default:
			now = append(now, tried{*route, row})
		}
		if row.access == platformAdmin {
			adminRoutes++
		}
	}
	for name := range rows {
		require.True(t, seen[name], "%s is in the role table but is no route", name)
	}
	slices.SortFunc(now, func(a, b tried) int {
		return strings.Compare(a.route.Path+" "+a.route.Method, b.route.Path+" "+b.route.Method)
	})
	slices.SortFunc(later, func(a, b tried) int {
		return strings.Compare(a.route.Path+" "+a.route.Method, b.route.Path+" "+b.route.Method)
	})

	var table []string
	requests := 0
	for _, tr := range append(now, later...) {
		route, row := tr.route, tr.row
		isAPI := strings.HasPrefix(route.Path, "/api/")
		line := fmt.Sprintf("%-7s %-58s", route.Method, route.Path)
		for _, role := range roles {
			prep(route.Method, route.Path)
			fx := f
			if row.throwaway {
				fx.orgID = copyOrg()
			}
			path := fx.path(route.Method, route.Path)
			requests++
			var status int
			var body, location string
			switch {
			case isAPI:
				payload := row.body
				if payload == "" && route.Method != http.MethodGet && route.Method != http.MethodHead {
					payload = "{}"
				}
				r := b.APICall(t, route.Method, path, tm.keys[role], payload)
				status, body, location = r.Status, r.Body, r.Header.Get("Location")
			default:
				c := tm.clients[role]
				if role == "anonymous" {
					c = anonymous
				}
				status, body, location = consoleCall(t, c, route.Method, path, row.body, role == "anonymous")
			}
			line += fmt.Sprintf(" %6d", status)
			where := fmt.Sprintf("%s %s as %s: %d %s %s", route.Method, path, role, status, location, firstLine(body))
			checkRoleCell(t, row, isAPI, role, status, body, location, where)
			if row.ownEmail && role != "anonymous" {
				assert.Contains(t, body, tm.emails[role], where)
			}
			if role == "other" || role == "anonymous" {
				assert.NotContains(t, body, teamName, where)
				assert.NotContains(t, body, tm.clusterName, where)
			}
		}
		table = append(table, fmt.Sprintf("%s  %s", line, rowNote(row)))
	}
	t.Logf("the role table over every route (%d routes, %d requests; %d cluster routes are TestOrgRolesOnClusterRoutes'):\n%-66s  owner  admin member viewer  other   anon\n%s",
		len(table), requests, clusterRoutes, "route", strings.Join(table, "\n"))
	require.Greater(t, clusterRoutes, 50)
	require.Greater(t, adminRoutes, 50)
}

// consoleCall makes a console request as c, with its session's CSRF token
// on a change (anonymous has one too: the check that matters then is
// requireUser's, not CSRF's).
func consoleCall(t *testing.T, c *handlerstest.Client, method, path, form string, anonymous bool) (int, string, string) {
	t.Helper()
	var req *http.Request
	var err error
	if method == http.MethodGet || method == http.MethodHead {
		req, err = http.NewRequest(method, c.Base+path, nil)
		require.NoError(t, err)
	} else {
		page := "/settings/profile"
		if anonymous {
			page = "/login"
		}
		token := c.CSRF(page)
		req, err = http.NewRequest(method, c.Base+path, strings.NewReader(form))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-CSRF-Token", token)
	}
	resp, err := c.HTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode, handlerstest.ReadBody(t, resp), resp.Header.Get("Location")
}

// checkRoleCell checks one cell of the table: what role got from a
// route of kind row.
func checkRoleCell(t *testing.T, row routeRow, isAPI bool, role string, status int, body, location, where string) {
	t.Helper()
	signIn := func() {
		switch {
		case row.anonymous != 0:
			assert.Equal(t, row.anonymous, status, where)
			return
		case isAPI:
			assert.Equal(t, http.StatusUnauthorized, status, "anonymous is refused: "+where)
			return
		}
		assert.Equal(t, http.StatusSeeOther, status, "anonymous is sent to sign in: "+where)
		assert.True(t, strings.HasPrefix(location, "/login"), "anonymous is sent to sign in: "+where)
	}
	granted := func(r orgs.Role) {
		if orgs.Allows(r, row.perm) {
			assert.NotEqual(t, http.StatusForbidden, status, "granted: "+where)
			assert.Less(t, status, 500, where)
		} else {
			assert.Equal(t, http.StatusForbidden, status, "refused: "+where)
		}
	}
	switch row.access {
	case open:
		assert.Less(t, status, 500, where)
	case edgeToken:
		assert.Equal(t, http.StatusUnauthorized, status, where)
	case platformAdmin:
		switch {
		case isAPI && role == "anonymous":
			assert.Equal(t, http.StatusUnauthorized, status, where)
		case isAPI:
			assert.Equal(t, http.StatusForbidden, status, "an ordinary user's key: "+where)
		default:
			assert.Equal(t, http.StatusNotFound, status, "the admin area is hidden: "+where)
		}
	case own:
		switch {
		case role == "anonymous":
			signIn()
		case row.object && role != "owner":
			assert.Equal(t, http.StatusNotFound, status, "the owner's: "+where)
		default:
			assert.Less(t, status, 500, where)
			assert.NotEqual(t, http.StatusForbidden, status, where)
			assert.NotEqual(t, http.StatusUnauthorized, status, where)
		}
	case inOrg, acting:
		switch {
		case role == "anonymous":
			signIn()
		case role == "other" && (row.access == inOrg || row.object):
			assert.Equal(t, http.StatusNotFound, status, "an outsider finds nothing: "+where)
			if isAPI {
				assert.Equal(t, "not_found", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, handlerstest.APIResponse{Body: body}).Error.Code, where)
			}
		case role == "other":
			granted(orgs.Owner) // of their own organization
		default:
			granted(orgs.Role(role))
		}
	}
}

// rowNote says, after a row of the logged table, what the route needs.
func rowNote(row routeRow) string {
	switch row.access {
	case open:
		return "open: " + row.why
	case edgeToken:
		return "edge token"
	case own:
		if row.object {
			return "own (the owner's object)"
		}
		return "own"
	case inOrg:
		return "org in path: " + string(row.perm)
	case acting:
		if row.object {
			return "working org, its object: " + string(row.perm)
		}
		return "working org: " + string(row.perm)
	case platformAdmin:
		return "platform admins"
	}
	return ""
}
