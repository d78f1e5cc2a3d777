package handlers_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// orgMember is a signed-in member of an organization, for the tests.
type orgMember struct {
	c     *handlerstest.Client
	id    int64
	email string
}

func signedUpMember(t *testing.T, b *handlerstest.Bundle, name string) orgMember {
	t.Helper()
	c, email := b.SignedUpUser(t, name)
	return orgMember{c: c, id: b.UserID(t, email), email: email}
}

// createOrg creates an organization through the form and returns its id.
func createOrg(t *testing.T, c *handlerstest.Client, name string) int64 {
	t.Helper()
	resp := c.Post("/orgs", "/orgs", url.Values{"name": {name}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	var id int64
	_, err := fmt.Sscanf(resp.Header.Get("Location"), "/orgs/%d", &id)
	require.NoError(t, err, resp.Header.Get("Location"))
	return id
}

// addOrgMember makes userID a member of organization id (invitations come
// later).
func addOrgMember(t *testing.T, b *handlerstest.Bundle, id, userID int64, role string) {
	t.Helper()
	_, err := b.Pool.Exec(context.Background(),
		"INSERT INTO organization_members (org_id, user_id, role) VALUES ($1, $2, $3)", id, userID, role)
	require.NoError(t, err)
}

// orgRole is userID's role in organization id, "" for none.
func orgRole(t *testing.T, b *handlerstest.Bundle, id, userID int64) string {
	t.Helper()
	var role string
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		"SELECT coalesce((SELECT role FROM organization_members WHERE org_id = $1 AND user_id = $2), '')", id, userID).Scan(&role))
	return role
}

func personalOrg(t *testing.T, b *handlerstest.Bundle, userID int64) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT id FROM organizations WHERE personal_of = $1", userID).Scan(&id))
	return id
}

// tableRow is the HTML of the table row whose data-testid is testid.
func tableRow(t *testing.T, body, testid string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<tr data-testid="` + regexp.QuoteMeta(testid) + `">(.*?)</tr>`).FindStringSubmatch(body)
	require.NotNil(t, m, "no row %s in %s", testid, body)
	return m[1]
}

// followFlash follows a POST's redirect and returns the page's flash.
func followFlash(t *testing.T, c *handlerstest.Client, resp *http.Response) string {
	t.Helper()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	code, body := c.Get(resp.Header.Get("Location"))
	require.Equal(t, http.StatusOK, code, body)
	// The toast: its icon, then the message.
	m := regexp.MustCompile(`data-testid="flash">.*?<span>([^<]*)</span>`).FindStringSubmatch(body)
	require.NotNil(t, m, "no flash on %s", resp.Header.Get("Location"))
	return html.UnescapeString(m[1])
}

// TestOrgCreateAndSwitch: a new organization is its maker's, as owner,
// and the current one; the list marks the current one and switches to
// the others; a name is needed.
func TestOrgCreateAndSwitch(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ada := signedUpMember(t, b, "ada")
	personal := personalOrg(t, b, ada.id)

	_, body := ada.c.Get("/")
	require.Regexp(t, `href="/orgs" data-testid="nav-orgs" title="Switch organization">[^<]+<`, body, "the user menu names the organization and leads to the switch")
	_, body = ada.c.Get("/orgs")
	row := tableRow(t, body, fmt.Sprintf("org-%d", personal))
	require.Contains(t, row, `data-testid="org-personal"`)
	require.Contains(t, row, `data-testid="org-current"`, "the personal organization is current at first")

	resp := ada.c.Post("/orgs", "/orgs", url.Values{"name": {"   "}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-name">Enter a name for the organization.<`)

	id := createOrg(t, ada.c, "  Platform team ")
	_, body = ada.c.Get(fmt.Sprintf("/orgs/%d", id))
	require.Contains(t, body, "Organization created.")
	require.Contains(t, body, `data-testid="org-title">`)
	require.Contains(t, body, "Your role: Owner.")
	_, body = ada.c.Get("/orgs")
	row = tableRow(t, body, fmt.Sprintf("org-%d", id))
	require.Contains(t, row, `data-testid="org-name">Platform team<`)
	require.Contains(t, row, `data-testid="org-role">Owner<`)
	require.Contains(t, row, `data-testid="org-current"`, "the new organization is current")
	require.NotContains(t, row, `data-testid="org-personal"`)
	row = tableRow(t, body, fmt.Sprintf("org-%d", personal))
	require.NotContains(t, row, `data-testid="org-current"`)
	require.Contains(t, row, `data-testid="org-switch"`)

	resp = ada.c.Post("/orgs", fmt.Sprintf("/orgs/%d/switch", personal), nil)
	require.Equal(t, "/orgs", resp.Header.Get("Location"))
	require.Equal(t, "Organization switched.", followFlash(t, ada.c, resp))
	_, body = ada.c.Get("/orgs")
	require.Contains(t, tableRow(t, body, fmt.Sprintf("org-%d", personal)), `data-testid="org-current"`)
	require.Contains(t, tableRow(t, body, fmt.Sprintf("org-%d", id)), `data-testid="org-switch"`)
	require.Contains(t, b.Audits(t, ada.id), "org.create")
}

// TestOrgMembers: every member sees the members; an admin changes the
// role of members who are not owners, an owner anyone's; a viewer sees no
// write controls and is refused when posting anyway; removing someone
// asks first; a member removed works in their personal organization
// again.
func TestOrgMembers(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ada := signedUpMember(t, b, "ada")
	bob, cat, dan := signedUpMember(t, b, "bob"), signedUpMember(t, b, "cat"), signedUpMember(t, b, "dan")
	id := createOrg(t, ada.c, "Platform team")
	addOrgMember(t, b, id, bob.id, "admin")
	addOrgMember(t, b, id, cat.id, "member")
	addOrgMember(t, b, id, dan.id, "viewer")
	page := fmt.Sprintf("/orgs/%d", id)
	roleOf := func(m orgMember) string { return fmt.Sprintf("/orgs/%d/members/%d/role", id, m.id) }
	removeOf := func(m orgMember) string { return fmt.Sprintf("/orgs/%d/members/%d/remove", id, m.id) }

	// The owner may change and remove everyone but themselves.
	code, body := ada.c.Get(page)
	require.Equal(t, http.StatusOK, code)
	for _, m := range []orgMember{ada, bob, cat, dan} {
		row := tableRow(t, body, fmt.Sprintf("org-member-%d", m.id))
		require.Contains(t, row, `data-testid="org-member-email">`+m.email+`<`)
		require.Contains(t, row, `data-testid="org-member-role-select"`)
		require.Equal(t, m.id != ada.id, strings.Contains(row, `data-testid="org-member-remove"`), m.email)
	}
	require.Contains(t, tableRow(t, body, fmt.Sprintf("org-member-%d", bob.id)), `<option value="admin" selected>Admin</option>`)
	require.Contains(t, body, `<option value="owner"`)

	// An admin: not the owner's row, and no owner to give.
	_, body = bob.c.Get(page)
	require.NotContains(t, tableRow(t, body, fmt.Sprintf("org-member-%d", ada.id)), `data-testid="org-member-role-select"`)
	require.Contains(t, tableRow(t, body, fmt.Sprintf("org-member-%d", ada.id)), `data-testid="org-member-role">Owner<`)
	require.NotContains(t, body, `<option value="owner"`)
	resp := bob.c.Post(page, roleOf(cat), url.Values{"role": {"viewer"}})
	require.Equal(t, page, resp.Header.Get("Location"))
	require.Equal(t, "Role changed.", followFlash(t, bob.c, resp))
	require.Equal(t, "viewer", orgRole(t, b, id, cat.id))
	resp = bob.c.Post(page, roleOf(cat), url.Values{"role": {"owner"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "the service refuses an admin making owners")
	require.Contains(t, handlerstest.ReadBody(t, resp), "Your role in this organization does not allow that.")
	require.Equal(t, "viewer", orgRole(t, b, id, cat.id))

	// A viewer: no write controls, and refusals.
	_, body = dan.c.Get(page)
	require.Contains(t, body, `data-testid="org-my-role">Your role: Viewer.<`)
	require.Contains(t, body, cat.email)
	for _, control := range []string{"org-role-form", "org-member-role-select", "org-member-remove"} {
		require.NotContains(t, body, `data-testid="`+control+`"`, control)
	}
	require.Contains(t, body, `data-testid="org-leave"`, "but they may leave")
	resp = dan.c.Post(page, roleOf(dan), url.Values{"role": {"admin"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp = dan.c.Post(page, roleOf(cat), url.Values{"role": {"member"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp = dan.c.Post(page, removeOf(cat), nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	code, _ = dan.c.Get(removeOf(cat))
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "viewer", orgRole(t, b, id, dan.id))
	require.Equal(t, "viewer", orgRole(t, b, id, cat.id))

	// cat works in the organization; the owner removes cat, after asking.
	resp = cat.c.Post("/orgs", fmt.Sprintf("/orgs/%d/switch", id), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	code, body = ada.c.Get(removeOf(cat))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="org-remove-form"`)
	require.Contains(t, body, cat.email)
	require.Equal(t, "viewer", orgRole(t, b, id, cat.id), "asking removes nobody")
	resp = ada.c.Post(removeOf(cat), removeOf(cat), nil)
	require.Equal(t, page, resp.Header.Get("Location"))
	require.Equal(t, "Member removed.", followFlash(t, ada.c, resp))
	require.Empty(t, orgRole(t, b, id, cat.id))
	code, _ = cat.c.Get(page)
	require.Equal(t, http.StatusNotFound, code)
	_, body = cat.c.Get("/orgs")
	require.NotContains(t, body, fmt.Sprintf(`data-testid="org-%d"`, id))
	require.Contains(t, tableRow(t, body, fmt.Sprintf("org-%d", personalOrg(t, b, cat.id))), `data-testid="org-current"`,
		"the personal organization is current again")
	require.Contains(t, b.Audits(t, ada.id), "org.member_remove")
	require.Contains(t, b.Audits(t, bob.id), "org.member_role")
}

// TestOrgLeave: a member leaves; the last owner cannot, nor anyone their
// personal organization, and the page says why.
func TestOrgLeave(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ada, cat := signedUpMember(t, b, "ada"), signedUpMember(t, b, "cat")
	id := createOrg(t, ada.c, "Platform team")
	addOrgMember(t, b, id, cat.id, "member")
	page, leave := fmt.Sprintf("/orgs/%d", id), fmt.Sprintf("/orgs/%d/leave", id)

	resp := ada.c.Post(page, leave, nil)
	require.Equal(t, page, resp.Header.Get("Location"))
	require.Equal(t, "An organization needs an owner: make another member owner first.", followFlash(t, ada.c, resp))
	require.Equal(t, "owner", orgRole(t, b, id, ada.id))

	personal := personalOrg(t, b, ada.id)
	_, body := ada.c.Get(fmt.Sprintf("/orgs/%d", personal))
	require.NotContains(t, body, `data-testid="org-leave"`)
	require.NotContains(t, body, `data-testid="org-member-remove"`)
	require.NotContains(t, body, `data-testid="org-member-role-select"`, "nobody changes the personal organization's owner")
	code, _ := ada.c.Get(fmt.Sprintf("/orgs/%d/leave", personal))
	require.Equal(t, http.StatusNotFound, code)
	resp = ada.c.Post("/orgs", fmt.Sprintf("/orgs/%d/leave", personal), nil)
	require.Equal(t, "You own your personal organization: you cannot leave it or stop owning it.", followFlash(t, ada.c, resp))

	resp = cat.c.Post("/orgs", fmt.Sprintf("/orgs/%d/switch", id), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	code, body = cat.c.Get(leave)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="org-leave-form"`)
	resp = cat.c.Post(leave, leave, nil)
	require.Equal(t, "/orgs", resp.Header.Get("Location"))
	_, body = cat.c.Get("/orgs")
	require.Contains(t, body, "You left the organization.")
	var personalName string
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT name FROM organizations WHERE personal_of = $1", cat.id).Scan(&personalName))
	require.Contains(t, body, `title="Switch organization">`+personalName+`</a>`, "the menu names the organization they are back in, on the very page")
	require.Empty(t, orgRole(t, b, id, cat.id))
	_, body = cat.c.Get("/orgs")
	require.Contains(t, tableRow(t, body, fmt.Sprintf("org-%d", personalOrg(t, b, cat.id))), `data-testid="org-current"`)
}

// TestOrgNonMember: a user who is not a member gets 404 on every
// organization route, as for one that does not exist, and changes
// nothing; a visitor is sent to sign in.
func TestOrgNonMember(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ada, eve := signedUpMember(t, b, "ada"), signedUpMember(t, b, "eve")
	id := createOrg(t, ada.c, "Platform team")
	member := fmt.Sprintf("/orgs/%d/members/%d", id, ada.id)
	for _, path := range []string{fmt.Sprintf("/orgs/%d", id), fmt.Sprintf("/orgs/%d/leave", id), member + "/remove", "/orgs/999999"} {
		code, _ := eve.c.Get(path)
		require.Equal(t, http.StatusNotFound, code, path)
	}
	for _, path := range []string{fmt.Sprintf("/orgs/%d/switch", id), fmt.Sprintf("/orgs/%d/leave", id), member + "/role", member + "/remove"} {
		resp := eve.c.Post("/orgs", path, url.Values{"role": {"viewer"}})
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}
	require.Equal(t, "owner", orgRole(t, b, id, ada.id))
	_, body := eve.c.Get("/orgs")
	require.Contains(t, tableRow(t, body, fmt.Sprintf("org-%d", personalOrg(t, b, eve.id))), `data-testid="org-current"`)

	visitor := b.Client(t)
	for _, path := range []string{"/orgs", fmt.Sprintf("/orgs/%d", id)} {
		resp, err := visitor.HTTP.Get(b.Server.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, path)
		require.Equal(t, "/login?next="+url.QueryEscape(path), resp.Header.Get("Location"), path)
	}
}
