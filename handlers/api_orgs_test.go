package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// apiOrgJSON is an organization as the API shows it to a member.
type apiOrgJSON struct {
	ID               int64  `json:"id"`
	Name             string `json:"name"`
	Kind             string `json:"kind"`
	Role             string `json:"role"`
	Acting           bool   `json:"acting"`
	ViewerKubeconfig bool   `json:"viewer_kubeconfig"`
	MemberCount      int64  `json:"member_count"`
}

type apiOrgMemberJSON struct {
	UserID int64  `json:"user_id"`
	Email  string `json:"email"`
	Role   string `json:"role"`
}

type apiOrgInvitationJSON struct {
	ID    int64  `json:"id"`
	Email string `json:"email"`
	Role  string `json:"role"`
	State string `json:"state"`
}

// apiOrgRoles are the callers of the role tables: a member in each role
// and "other", a user who is not a member.
var apiOrgRoles = []string{"owner", "admin", "member", "viewer", "other"}

// apiOrgTeam is a team's organization, made through the API by its owner,
// with a member in each other role; each caller's write key is made in
// their personal organization, so that the team is not the one it acts
// in.
type apiOrgTeam struct {
	id    int64
	users map[string]orgMember
	keys  map[string]string
}

func newAPIOrgTeam(t *testing.T, b *handlerstest.Bundle, name string) apiOrgTeam {
	t.Helper()
	tm := apiOrgTeam{users: map[string]orgMember{}, keys: map[string]string{}}
	for _, role := range apiOrgRoles {
		tm.users[role] = signedUpMember(t, b, name+"-"+role)
		tm.keys[role] = tm.users[role].c.CreateKey(role)
	}
	r := b.APICall(t, http.MethodPost, "/api/v1/organizations", tm.keys["owner"], `{"name": " `+name+` team "}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	made := handlerstest.DecodeAs[apiOrgJSON](t, r)
	require.Equal(t, apiOrgJSON{ID: made.ID, Name: name + " team", Kind: "team", Role: "owner", MemberCount: 1}, made)
	require.Equal(t, fmt.Sprintf("/api/v1/organizations/%d", made.ID), r.Header.Get("Location"))
	tm.id = made.ID
	for _, role := range []string{"admin", "member", "viewer"} {
		addOrgMember(t, b, tm.id, tm.users[role].id, role)
	}
	return tm
}

func (tm apiOrgTeam) path(format string, args ...any) string {
	return fmt.Sprintf("/api/v1/organizations/%d", tm.id) + fmt.Sprintf(format, args...)
}

// insertOrgUser makes an account, with no way to sign in, a member of
// organization id in role: someone the callers act upon.
func insertOrgUser(t *testing.T, b *handlerstest.Bundle, id int64, role string) int64 {
	t.Helper()
	var userID int64
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		"INSERT INTO users (email, name, email_verified_at) VALUES ($1, 'Target', now()) RETURNING id",
		handlerstest.UniqueEmail("target")).Scan(&userID))
	addOrgMember(t, b, id, userID, role)
	return userID
}

// TestAPIOrgRoles is the role table over every route of one organization:
// members read it, its members and invitations; owners and admins rename
// it, change roles, remove members and invite; only owners let viewers
// download a kubeconfig; members and viewers are refused changes (403,
// saying why), and a user who is not a member finds nothing (404, as
// for an organization that does not exist). Each caller changes members
// and invitations of their own, so that the rows do not depend on one
// another.
func TestAPIOrgRoles(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tm := newAPIOrgTeam(t, b, "roles")
	target, invitation := map[string]int64{}, map[string]int64{}
	for _, role := range apiOrgRoles {
		target[role] = insertOrgUser(t, b, tm.id, "member")
		r := b.APICall(t, http.MethodPost, tm.path("/invitations"), tm.keys["owner"],
			fmt.Sprintf(`{"email": %q, "role": "viewer"}`, handlerstest.UniqueEmail("revoked-by-"+role)))
		require.Equal(t, http.StatusCreated, r.Status, r.Body)
		invitation[role] = handlerstest.DecodeAs[apiOrgInvitationJSON](t, r).ID
	}
	// The owner deletes a team of their own, which holds nothing the
	// table reads after; the others try the team.
	made := b.APICall(t, http.MethodPost, "/api/v1/organizations", tm.keys["owner"], `{"name": "Gone"}`)
	require.Equal(t, http.StatusCreated, made.Status, made.Body)
	gone := handlerstest.DecodeAs[apiOrgJSON](t, made).ID
	reads := map[string]int{"owner": 200, "admin": 200, "member": 200, "viewer": 200, "other": 404}
	managers := func(ok int) map[string]int {
		return map[string]int{"owner": ok, "admin": ok, "member": 403, "viewer": 403, "other": 404}
	}
	cases := map[string]struct {
		path func(role string) string
		body func(role string) string
		want map[string]int
	}{
		"GET /api/v1/organizations/:id": {func(string) string { return tm.path("") }, nil, reads},
		"PATCH /api/v1/organizations/:id": {func(string) string { return tm.path("") },
			func(role string) string { return `{"name": "Renamed by ` + role + `"}` }, managers(200)},
		"DELETE /api/v1/organizations/:id": {
			func(role string) string {
				if role == "owner" {
					return fmt.Sprintf("/api/v1/organizations/%d", gone)
				}
				return tm.path("")
			}, nil, map[string]int{"owner": 204, "admin": 403, "member": 403, "viewer": 403, "other": 404}},
		"GET /api/v1/organizations/:id/members": {func(string) string { return tm.path("/members") }, nil, reads},
		"GET /api/v1/organizations/:id/members/:user_id": {
			func(role string) string { return tm.path("/members/%d", target[role]) }, nil, reads},
		"PATCH /api/v1/organizations/:id/members/:user_id": {
			func(role string) string { return tm.path("/members/%d", target[role]) },
			func(string) string { return `{"role": "viewer"}` }, managers(200)},
		"DELETE /api/v1/organizations/:id/members/:user_id": {
			func(role string) string { return tm.path("/members/%d", target[role]) }, nil, managers(204)},
		"GET /api/v1/organizations/:id/invitations": {func(string) string { return tm.path("/invitations") }, nil, reads},
		"POST /api/v1/organizations/:id/invitations": {func(string) string { return tm.path("/invitations") },
			func(role string) string {
				return fmt.Sprintf(`{"email": %q, "role": "member"}`, handlerstest.UniqueEmail("invited-by-"+role))
			}, managers(201)},
		"GET /api/v1/organizations/:id/invitations/:invitation_id": {
			func(role string) string { return tm.path("/invitations/%d", invitation[role]) }, nil, reads},
		"DELETE /api/v1/organizations/:id/invitations/:invitation_id": {
			func(role string) string { return tm.path("/invitations/%d", invitation[role]) }, nil, managers(200)},
	}
	// Read before the changes: a removed member or a revoked invitation
	// reads differently.
	order := []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete}
	seen := 0
	for _, method := range order {
		for _, route := range b.Echo.Routes() {
			if route.Method != method || !strings.HasPrefix(route.Path, "/api/v1/organizations/:id") {
				continue
			}
			seen++
			name := route.Method + " " + route.Path
			tc, ok := cases[name]
			require.True(t, ok, "%s is not in the role table", name)
			t.Run(name, func(t *testing.T) {
				for _, role := range apiOrgRoles {
					body := ""
					if tc.body != nil {
						body = tc.body(role)
					}
					r := b.APICall(t, route.Method, tc.path(role), tm.keys[role], body)
					where := fmt.Sprintf("%s as %s: %s", tc.path(role), role, r.Body)
					require.Equal(t, tc.want[role], r.Status, where)
					switch r.Status {
					case http.StatusForbidden:
						e := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r)
						require.Equal(t, "forbidden", e.Error.Code, where)
						require.Equal(t, "Your role in this organization does not allow that.", e.Error.Message, where)
					case http.StatusNotFound:
						e := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r)
						require.Equal(t, "not_found", e.Error.Code, where)
						require.Equal(t, "There is no such organization, or you are not a member of it.", e.Error.Message, where)
					}
				}
			})
		}
	}
	require.Equal(t, len(cases), seen, "every route of the table is a route")

	// Only owners let viewers download a kubeconfig.
	for role, want := range map[string]int{"owner": 200, "admin": 403, "member": 403, "viewer": 403, "other": 404} {
		r := b.APICall(t, http.MethodPatch, tm.path(""), tm.keys[role], `{"viewer_kubeconfig": true}`)
		require.Equal(t, want, r.Status, "%s: %s", role, r.Body)
	}
	// A change the role allows in part is made in none of it.
	r := b.APICall(t, http.MethodPatch, tm.path(""), tm.keys["admin"], `{"name": "Half", "viewer_kubeconfig": false}`)
	require.Equal(t, http.StatusForbidden, r.Status, r.Body)
	r = b.APICall(t, http.MethodGet, tm.path(""), tm.keys["viewer"], "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	got := handlerstest.DecodeAs[apiOrgJSON](t, r)
	require.Equal(t, "Renamed by admin", got.Name)
	require.True(t, got.ViewerKubeconfig)
	require.Equal(t, "viewer", got.Role)
	require.EqualValues(t, 7, got.MemberCount, "the four members and the three targets the owner and admin did not remove")
	require.Equal(t, []string{"org.update", "org.update", "org.update"}, auditActions(t, b, tm.id, "org.update"))

	// Who was changed and removed, and which invitations were revoked.
	for _, role := range apiOrgRoles {
		want := map[string]string{"owner": "", "admin": "", "member": "member", "viewer": "member", "other": "member"}[role]
		require.Equal(t, want, orgRole(t, b, tm.id, target[role]), "the target of %s", role)
		r := b.APICall(t, http.MethodGet, tm.path("/invitations/%d", invitation[role]), tm.keys["owner"], "")
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		state := handlerstest.DecodeAs[apiOrgInvitationJSON](t, r).State
		require.Equal(t, map[bool]string{true: "revoked", false: "pending"}[role == "owner" || role == "admin"], state, role)
	}
}

// auditActions are the actions of the audit events of organization id
// named action.
func auditActions(t *testing.T, b *handlerstest.Bundle, id int64, action string) []string {
	t.Helper()
	rows, err := b.Pool.Query(context.Background(),
		"SELECT action FROM audit_events WHERE target_type = 'organization' AND target_id = $1 AND action = $2 ORDER BY id", fmt.Sprint(id), action)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		require.NoError(t, rows.Scan(&a))
		out = append(out, a)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestAPIOrgList: a key lists every organization its user is a member of,
// with their role, a page at a time, and marks the one it acts in; a new
// organization needs a name.
func TestAPIOrgList(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tm := newAPIOrgTeam(t, b, "list")
	viewer := tm.users["viewer"]
	personal := personalOrg(t, b, viewer.id)

	list := func(key, query string) (orgs []apiOrgJSON, next string) {
		t.Helper()
		r := b.APICall(t, http.MethodGet, "/api/v1/organizations"+query, key, "")
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		page := handlerstest.DecodeAs[struct {
			Organizations []apiOrgJSON `json:"organizations"`
			Next          string       `json:"next"`
		}](t, r)
		return page.Organizations, page.Next
	}
	orgs, next := list(tm.keys["viewer"], "")
	require.Empty(t, next)
	require.Equal(t, []apiOrgJSON{
		{ID: tm.id, Name: "list team", Kind: "team", Role: "viewer"},
		{ID: personal, Name: "list-viewer", Kind: "personal", Role: "owner", Acting: true},
	}, orgs, "newest first; the key acts in the personal organization")
	orgs, next = list(tm.keys["viewer"], "?limit=1")
	require.Len(t, orgs, 1)
	require.Equal(t, tm.id, orgs[0].ID)
	orgs, next = list(tm.keys["viewer"], "?limit=1&cursor="+next)
	require.Empty(t, next)
	require.Equal(t, personal, orgs[0].ID)
	orgs, _ = list(tm.keys["other"], "")
	require.Len(t, orgs, 1, "not the team's")

	// A key made in the team acts in it.
	resp := viewer.c.Post("/orgs", fmt.Sprintf("/orgs/%d/switch", tm.id), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	teamKey := viewer.c.CreateKey("in the team")
	orgs, _ = list(teamKey, "")
	require.True(t, orgs[0].Acting)
	require.False(t, orgs[1].Acting)
	r := b.APICall(t, http.MethodGet, tm.path(""), teamKey, "")
	require.True(t, handlerstest.DecodeAs[apiOrgJSON](t, r).Acting)

	// Members, a page at a time.
	r = b.APICall(t, http.MethodGet, tm.path("/members?limit=3"), tm.keys["viewer"], "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	members := handlerstest.DecodeAs[struct {
		Members []apiOrgMemberJSON `json:"members"`
		Next    string             `json:"next"`
	}](t, r)
	require.Len(t, members.Members, 3)
	require.NotEmpty(t, members.Next)
	r = b.APICall(t, http.MethodGet, tm.path("/members?limit=3&cursor=%s", members.Next), tm.keys["viewer"], "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	rest := handlerstest.DecodeAs[struct {
		Members []apiOrgMemberJSON `json:"members"`
	}](t, r)
	require.Len(t, rest.Members, 1)
	require.Equal(t, tm.users["owner"].id, rest.Members[0].UserID)
	require.Equal(t, "owner", rest.Members[0].Role)

	// What a name must be; what the body may hold.
	for _, body := range []string{`{"name": "  "}`, `{}`, fmt.Sprintf(`{"name": %q}`, strings.Repeat("x", 101))} {
		r := b.APICall(t, http.MethodPost, "/api/v1/organizations", tm.keys["other"], body)
		requireAPIRefusal(t, r, http.StatusUnprocessableEntity, "name", body)
	}
	requireAPIRefusal(t, b.APICall(t, http.MethodPatch, tm.path(""), tm.keys["owner"], `{"name": ""}`), http.StatusUnprocessableEntity, "name", "a blank name")
	requireAPIRefusal(t, b.APICall(t, http.MethodPatch, tm.path(""), tm.keys["owner"], `{"owner": 1}`), http.StatusBadRequest, "", "an unknown field")
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, "/api/v1/organizations/999999999", tm.keys["owner"], ""), http.StatusNotFound, "", "no such organization")
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, tm.path("/members/999999999"), tm.keys["owner"], ""), http.StatusNotFound, "", "no such member")
	requireAPIRefusal(t, b.APICall(t, http.MethodPatch, tm.path("/members/%d", tm.users["member"].id), tm.keys["owner"], `{"role": "root"}`),
		http.StatusUnprocessableEntity, "role", "no such role")
	r = b.APICall(t, http.MethodGet, "/api/v1/organizations?cursor=next", tm.keys["owner"], "")
	requireAPIRefusal(t, r, http.StatusBadRequest, "", "a cursor the list did not give")
}

// TestAPIOrgOwners: an organization keeps an owner: its last owner can
// neither be demoted nor leave (409 last_owner, saying so), nobody leaves
// or stops owning their personal organization (409 personal_owner); with
// a second owner, the first may go.
func TestAPIOrgOwners(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tm := newAPIOrgTeam(t, b, "owners")
	owner := tm.users["owner"]

	conflict := func(r handlerstest.APIResponse, code, message string) {
		t.Helper()
		require.Equal(t, http.StatusConflict, r.Status, r.Body)
		e := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r)
		require.Equal(t, code, e.Error.Code)
		require.Equal(t, message, e.Error.Message)
	}
	const lastOwner = "An organization needs an owner: make another member owner first."
	const personalOwner = "You own your personal organization: you cannot leave it or stop owning it."
	self := tm.path("/members/%d", owner.id)
	conflict(b.APICall(t, http.MethodPatch, self, tm.keys["owner"], `{"role": "admin"}`), "last_owner", lastOwner)
	conflict(b.APICall(t, http.MethodDelete, self, tm.keys["owner"], ""), "last_owner", lastOwner)
	require.Equal(t, "owner", orgRole(t, b, tm.id, owner.id))

	personal := fmt.Sprintf("/api/v1/organizations/%d/members/%d", personalOrg(t, b, owner.id), owner.id)
	conflict(b.APICall(t, http.MethodDelete, personal, tm.keys["owner"], ""), "personal_owner", personalOwner)
	conflict(b.APICall(t, http.MethodPatch, personal, tm.keys["owner"], `{"role": "viewer"}`), "personal_owner", personalOwner)

	// Admins make no owners; owners do, and may then leave.
	admin := tm.path("/members/%d", tm.users["admin"].id)
	require.Equal(t, http.StatusForbidden, b.APICall(t, http.MethodPatch, admin, tm.keys["admin"], `{"role": "owner"}`).Status)
	r := b.APICall(t, http.MethodPatch, admin, tm.keys["owner"], `{"role": "owner"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, "owner", handlerstest.DecodeAs[apiOrgMemberJSON](t, r).Role)
	r = b.APICall(t, http.MethodDelete, self, tm.keys["owner"], "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, tm.path(""), tm.keys["owner"], ""), http.StatusNotFound, "", "left")
	conflict(b.APICall(t, http.MethodDelete, admin, tm.keys["admin"], ""), "last_owner", lastOwner)
}

// TestAPIOrgRemovalRevokesKeys: a member removed from an organization
// loses their keys in it at once (401); their keys elsewhere keep
// working. A member leaves with their own id.
func TestAPIOrgRemovalRevokesKeys(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tm := newAPIOrgTeam(t, b, "removal")
	member := tm.users["member"]
	resp := member.c.Post("/orgs", fmt.Sprintf("/orgs/%d/switch", tm.id), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	teamKey := member.c.CreateKey("in the team")
	handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+teamKey), member.email)

	r := b.APICall(t, http.MethodDelete, tm.path("/members/%d", member.id), tm.keys["admin"], "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", "Bearer "+teamKey), "the key in the team is revoked")
	handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+tm.keys["member"]), member.email)
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, tm.path(""), tm.keys["member"], ""), http.StatusNotFound, "", "removed")
	var revoked bool
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT revoked_at IS NOT NULL FROM api_keys WHERE id = $1", b.KeyID(t, teamKey)).Scan(&revoked))
	require.True(t, revoked, "revoked for good")

	// The viewer leaves.
	viewer := tm.users["viewer"]
	r = b.APICall(t, http.MethodDelete, tm.path("/members/%d", viewer.id), tm.keys["viewer"], "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	require.Empty(t, orgRole(t, b, tm.id, viewer.id))
	requireAPIRefusal(t, b.APICall(t, http.MethodDelete, tm.path("/members/%d", viewer.id), tm.keys["owner"], ""), http.StatusNotFound, "", "gone")
}

// TestAPIOrgInvitations: an invitation made through the API is mailed
// with its link, which no answer of the API holds; it is read and
// revoked once; an address must be one, and not a member's.
func TestAPIOrgInvitations(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tm := newAPIOrgTeam(t, b, "invitations")
	invited := handlerstest.UniqueEmail("invited")

	r := b.APICall(t, http.MethodPost, tm.path("/invitations"), tm.keys["admin"], fmt.Sprintf(`{"email": %q, "role": "member"}`, invited))
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	var made map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Body), &made))
	require.ElementsMatch(t, []string{"id", "email", "role", "state", "invited_by_email", "created_at", "expires_at", "accepted_at", "revoked_at"},
		handlerstest.MapKeys(made), "no token")
	inv := handlerstest.DecodeAs[apiOrgInvitationJSON](t, r)
	require.Equal(t, apiOrgInvitationJSON{ID: inv.ID, Email: invited, Role: "member", State: "pending"}, inv)
	require.Equal(t, tm.users["admin"].email, made["invited_by_email"])
	expires, err := time.Parse(time.RFC3339, made["expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(7*24*time.Hour), expires, time.Hour)
	one := tm.path("/invitations/%d", inv.ID)
	require.Equal(t, one, r.Header.Get("Location"))

	msg := b.WaitMail(t, invited, "You are invited to invitations team on KubeBYON")
	link := orgInvitationLink.FindString(msg.Text)
	require.NotEmpty(t, link, msg.Text)
	token := strings.TrimPrefix(link, "/orgs/invitations/")
	for _, path := range []string{one, tm.path("/invitations")} {
		r := b.APICall(t, http.MethodGet, path, tm.keys["viewer"], "")
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		require.Contains(t, r.Body, invited)
		require.NotContains(t, r.Body, token, "the link is the mail's only")
	}

	r = b.APICall(t, http.MethodDelete, one, tm.keys["owner"], "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, "revoked", handlerstest.DecodeAs[apiOrgInvitationJSON](t, r).State)
	r = b.APICall(t, http.MethodDelete, one, tm.keys["owner"], "")
	require.Equal(t, http.StatusConflict, r.Status, r.Body)
	require.Equal(t, "invitation_not_pending", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Code)
	r = b.APICall(t, http.MethodDelete, tm.path("/invitations/999999999"), tm.keys["owner"], "")
	requireAPIRefusal(t, r, http.StatusNotFound, "", "no such invitation")
	require.Equal(t, "This organization has no such invitation.", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Message)

	for _, tt := range []struct{ body, field string }{
		{`{"email": "not an address", "role": "viewer"}`, "email"},
		{fmt.Sprintf(`{"email": %q, "role": "viewer"}`, tm.users["member"].email), "email"},
		{fmt.Sprintf(`{"email": %q, "role": "root"}`, invited), "role"},
	} {
		requireAPIRefusal(t, b.APICall(t, http.MethodPost, tm.path("/invitations"), tm.keys["owner"], tt.body), http.StatusUnprocessableEntity, tt.field, tt.body)
	}
	r = b.APICall(t, http.MethodPost, tm.path("/invitations"), tm.keys["admin"], fmt.Sprintf(`{"email": %q, "role": "owner"}`, invited))
	require.Equal(t, http.StatusForbidden, r.Status, "admins invite no owners: %s", r.Body)
}
