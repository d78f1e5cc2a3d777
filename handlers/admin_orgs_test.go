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
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/orgs"
)

// orgFixture is a platform with an admin, two users and a team.
type orgFixture struct {
	b                  *handlerstest.Bundle
	admin, ann, bob    *handlerstest.Client
	annEmail, bobEmail string
	annID, bobID       int64
	// team is "Rocket Lab": ann owns it, bob is a viewer; it invited
	// pending@ (pending) and revoked@ (revoked).
	team int64
}

func newOrgFixture(t *testing.T) orgFixture {
	t.Helper()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	f := orgFixture{b: b}
	f.admin, _ = b.SignedUpAdmin(t, "root")
	f.ann, f.annEmail = b.SignedUpUser(t, "ann")
	f.bob, f.bobEmail = b.SignedUpUser(t, "bob")
	f.annID, f.bobID = b.UserID(t, f.annEmail), b.UserID(t, f.bobEmail)
	o, err := (&orgs.Service{Pool: b.Pool}).Create(ctx, "Rocket Lab", audit.Actor{UserID: f.annID, Email: f.annEmail})
	require.NoError(t, err)
	f.team = o.ID
	_, err = b.Pool.Exec(ctx, "INSERT INTO organization_members (org_id, user_id, role) VALUES ($1, $2, 'viewer')", f.team, f.bobID)
	require.NoError(t, err)
	_, err = b.Pool.Exec(ctx, `INSERT INTO org_invitations (org_id, email, role, token_hash, invited_by, expires_at, revoked_at)
		VALUES ($1, 'pending@example.com', 'member', 'h1', $2, now() + interval '7 days', NULL),
		       ($1, 'revoked@example.com', 'admin', 'h2', $2, now() + interval '7 days', now())`, f.team, f.annID)
	require.NoError(t, err)
	return f
}

// personalOrg is the id of the personal organization of the account
// userID.
func (f orgFixture) personalOrg(t *testing.T, userID int64) int64 {
	t.Helper()
	var id int64
	require.NoError(t, f.b.Pool.QueryRow(context.Background(), "SELECT id FROM organizations WHERE personal_of = $1", userID).Scan(&id))
	return id
}

var orgRowID = regexp.MustCompile(`data-testid="admin-org-row" data-org-id="(\d+)"`)

// orgRows is the ids of the organizations a list page shows, in order.
func orgRows(body string) []string {
	var ids []string
	for _, m := range orgRowID.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// TestAdminOrgListPage: the admins' list shows every organization, newest
// first, personal and team ones, with the personal one's account and the
// number of members; searched by name or a member's email; a page at a
// time.
func TestAdminOrgListPage(t *testing.T) {
	t.Parallel()
	f := newOrgFixture(t)
	ctx := context.Background()
	annOrg, bobOrg := f.personalOrg(t, f.annID), f.personalOrg(t, f.bobID)

	code, body := f.admin.Get("/admin/organizations")
	require.Equal(t, http.StatusOK, code)
	require.Regexp(t, `href="/admin/organizations"\s+title="Organizations"\s+data-testid="admin-nav-organizations"\s+aria-current="page"`, body)
	require.Contains(t, body, `data-testid="admin-org-search"`)
	rows := orgRows(body)
	require.Len(t, rows, 4, "the three accounts' personal organizations and the team")
	require.Equal(t, fmt.Sprint(f.team), rows[0], "newest first")
	team := orgRowOf(t, body, f.team)
	require.Contains(t, team, "Rocket Lab")
	require.Contains(t, team, `data-testid="admin-org-kind">Team<`)
	require.Contains(t, team, `data-testid="admin-org-members">2<`)
	ann := orgRowOf(t, body, annOrg)
	require.Contains(t, ann, `data-testid="admin-org-kind">Personal<`)
	require.Contains(t, ann, fmt.Sprintf(`href="/admin/users/%d">%s<`, f.annID, f.annEmail))
	require.Contains(t, ann, `data-testid="admin-org-members">1<`)
	require.NotContains(t, body, `data-testid="admin-orgs-next"`)

	for _, tt := range []struct {
		name, q string
		want    []int64
	}{
		{"by name, any case", "rOCKET", []int64{f.team}},
		{"by a member's email", strings.ToUpper(f.bobEmail), []int64{f.team, bobOrg}},
		{"none", "nobody-at-all", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := f.admin.Get("/admin/organizations?q=" + url.QueryEscape(tt.q))
			require.Equal(t, http.StatusOK, code)
			require.Contains(t, body, `value="`+tt.q+`"`, "the search box keeps the search")
			var want []string
			for _, id := range tt.want {
				want = append(want, fmt.Sprint(id))
			}
			require.Equal(t, want, orgRows(body))
			m := apiCallCommand.FindStringSubmatch(body)
			require.NotNil(t, m, "the page shows its API call, with the search")
			require.Equal(t, f.b.Server.URL+"/api/v1/admin/organizations?q="+url.QueryEscape(tt.q), html.UnescapeString(m[2]))
			if tt.want == nil {
				require.Contains(t, body, "No organizations match.")
			}
		})
	}

	// htmx gets only the results.
	resp, body := f.admin.HTMX("/admin/organizations?q=rocket")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(body, `<div id="admin-orgs-results"`), body)
	require.Equal(t, []string{fmt.Sprint(f.team)}, orgRows(body))

	// 30 teams more: pages of 25, newest first, keeping the search.
	_, err := f.b.Pool.Exec(ctx, `INSERT INTO organizations (name, created_by)
		SELECT 'Bulk team ' || g, $1::bigint FROM generate_series(1, 30) g`, f.annID)
	require.NoError(t, err)
	next := "/admin/organizations?q=BULK"
	var sizes []int
	seen := map[string]bool{}
	for next != "" {
		code, body = f.admin.Get(next)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, len(sizes) > 0, strings.Contains(body, `data-testid="admin-orgs-first"`), "a link back to the first page, from the others")
		page := orgRows(body)
		sizes = append(sizes, len(page))
		for _, id := range page {
			require.False(t, seen[id], "no organization on two pages")
			seen[id] = true
		}
		next = ""
		if strings.Contains(body, `data-testid="admin-orgs-next"`) {
			next = handlerstest.LinkOf(t, body, "admin-orgs-next")
			require.Equal(t, "/admin/organizations?before="+page[len(page)-1]+"&q=BULK", next)
		}
	}
	require.Equal(t, []int{25, 5}, sizes)
}

// orgRowOf is the list's table row of the organization id.
func orgRowOf(t *testing.T, body string, id int64) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<tr data-testid="admin-org-row" data-org-id="` + fmt.Sprint(id) + `">.*?</tr>`).FindString(body)
	require.NotEmpty(t, m, "organization %d is listed", id)
	return m
}

// TestAdminOrgPage: an organization's page shows who made it, its members
// with their roles and its invitations in their states; 404 for one that
// does not exist; the user's page lists their organizations and roles.
func TestAdminOrgPage(t *testing.T) {
	t.Parallel()
	f := newOrgFixture(t)

	code, body := f.admin.Get(fmt.Sprintf("/admin/organizations/%d", f.team))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-org-name">Rocket Lab<`)
	require.Contains(t, body, `data-testid="admin-org-kind">Team<`)
	require.Regexp(t, `(?s)data-testid="admin-org-created-by">\s*<a href="/admin/users/`+fmt.Sprint(f.annID)+`">`+regexp.QuoteMeta(f.annEmail)+`</a>`, body)
	require.Contains(t, body, "Members (2)")
	members := regexp.MustCompile(`data-testid="admin-org-member-row" data-user-id="(\d+)" data-role="(\w+)"`).FindAllStringSubmatch(body, -1)
	require.Len(t, members, 2)
	require.Equal(t, []string{fmt.Sprint(f.annID), "owner"}, members[0][1:], "owners first")
	require.Equal(t, []string{fmt.Sprint(f.bobID), "viewer"}, members[1][1:])
	require.Contains(t, body, ">Viewer<")
	invs := regexp.MustCompile(`data-testid="admin-org-invitation-row" data-state="(\w+)"`).FindAllStringSubmatch(body, -1)
	require.Len(t, invs, 2)
	require.Equal(t, "revoked", invs[0][1], "newest first")
	require.Equal(t, "pending", invs[1][1])
	require.Contains(t, body, "pending@example.com")
	require.Contains(t, body, ">Revoked")

	// A personal organization names its account.
	code, body = f.admin.Get(fmt.Sprintf("/admin/organizations/%d", f.personalOrg(t, f.bobID)))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-org-kind">Personal<`)
	require.Contains(t, body, fmt.Sprintf(`href="/admin/users/%d" data-testid="admin-org-personal-of">%s<`, f.bobID, f.bobEmail))
	require.Contains(t, body, "No invitations.")

	for _, path := range []string{fmt.Sprintf("/admin/organizations/%d", f.team+1000), "/admin/organizations/rocket"} {
		code, body = f.admin.Get(path)
		require.Equal(t, http.StatusNotFound, code, path)
		require.Contains(t, body, "Page not found", path)
	}

	// The user's page: their organizations, the personal one first, with
	// their role, each linking to its page.
	code, body = f.admin.Get(fmt.Sprintf("/admin/users/%d", f.bobID))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-user-orgs"`)
	rows := regexp.MustCompile(`data-testid="admin-user-org-row" data-org-id="(\d+)" data-role="(\w+)">\s*<td><a href="([^"]+)">([^<]+)<`).FindAllStringSubmatch(body, -1)
	require.Len(t, rows, 2)
	bobOrg := fmt.Sprint(f.personalOrg(t, f.bobID))
	require.Equal(t, []string{bobOrg, "owner", "/admin/organizations/" + bobOrg, "bob"}, rows[0][1:])
	require.Equal(t, []string{fmt.Sprint(f.team), "viewer", fmt.Sprintf("/admin/organizations/%d", f.team), "Rocket Lab"}, rows[1][1:])
}

// TestAdminOrgPagesAreHiddenFromOthers: users and visitors get the admin
// area's 404 on the organization pages.
func TestAdminOrgPagesAreHiddenFromOthers(t *testing.T) {
	t.Parallel()
	f := newOrgFixture(t)
	for _, who := range []struct {
		name string
		c    *handlerstest.Client
	}{{"owner of the team", f.ann}, {"visitor", f.b.Client(t)}} {
		for _, path := range []string{"/admin/organizations", "/admin/organizations?q=rocket", fmt.Sprintf("/admin/organizations/%d", f.team)} {
			code, body := who.c.Get(path)
			require.Equal(t, http.StatusNotFound, code, "%s %s", who.name, path)
			require.Contains(t, body, "Page not found")
			require.NotContains(t, body, "Rocket Lab")
		}
	}
}

// adminOrgJSON is an organization as the admin API shows it.
type adminOrgJSON struct {
	ID                int64   `json:"id"`
	Name              string  `json:"name"`
	Kind              string  `json:"kind"`
	PersonalUserID    *int64  `json:"personal_user_id"`
	PersonalUserEmail *string `json:"personal_user_email"`
	MemberCount       int64   `json:"member_count"`
	CreatedByID       *int64  `json:"created_by_id"`
	CreatedByEmail    *string `json:"created_by_email"`
	Members           []struct {
		UserID int64  `json:"user_id"`
		Email  string `json:"email"`
		Role   string `json:"role"`
	} `json:"members"`
	Invitations []struct {
		Email          string  `json:"email"`
		Role           string  `json:"role"`
		State          string  `json:"state"`
		InvitedByEmail *string `json:"invited_by_email"`
		RevokedAt      *string `json:"revoked_at"`
	} `json:"invitations"`
}

// TestAPIAdminOrganizations: an admin key lists every organization,
// newest first, a page at a time, searched by name or a member's email,
// reads one with its members and invitations (404 for none), and an
// account's organizations with its roles in its GET.
func TestAPIAdminOrganizations(t *testing.T) {
	t.Parallel()
	f := newOrgFixture(t)
	b := f.b
	key := f.admin.CreateScopedKey("ops", "admin")
	annOrg, bobOrg := f.personalOrg(t, f.annID), f.personalOrg(t, f.bobID)

	all := adminPages[adminOrgJSON](t, b, key, "/api/v1/admin/organizations", "organizations", nil)
	require.Len(t, all, 4)
	require.Equal(t, f.team, all[0].ID, "newest first")
	require.Equal(t, adminOrgJSON{ID: f.team, Name: "Rocket Lab", Kind: "team", MemberCount: 2}, all[0])
	for i := 1; i < len(all); i++ {
		require.Less(t, all[i].ID, all[i-1].ID)
		require.Equal(t, "personal", all[i].Kind)
		require.Equal(t, int64(1), all[i].MemberCount)
	}
	require.Equal(t, annOrg, all[2].ID)
	require.Equal(t, f.annID, *all[2].PersonalUserID)
	require.Equal(t, f.annEmail, *all[2].PersonalUserEmail)

	for _, tt := range []struct {
		q    string
		want []int64
	}{
		{"rocket", []int64{f.team}},
		{strings.ToUpper(f.bobEmail), []int64{f.team, bobOrg}},
		{"nobody-at-all", nil},
	} {
		var got []int64
		for _, o := range adminPages[adminOrgJSON](t, b, key, "/api/v1/admin/organizations", "organizations", url.Values{"q": {tt.q}}) {
			got = append(got, o.ID)
		}
		require.Equal(t, tt.want, got, tt.q)
	}
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, "/api/v1/admin/organizations?cursor=next", key, ""), http.StatusBadRequest, "", "a cursor the list did not give")
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, "/api/v1/admin/organizations?limit=0", key, ""), http.StatusBadRequest, "", "a limit out of range")

	r := b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/admin/organizations/%d", f.team), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	team := handlerstest.DecodeAs[adminOrgJSON](t, r)
	require.Equal(t, "Rocket Lab", team.Name)
	require.Nil(t, team.PersonalUserID)
	require.Nil(t, team.PersonalUserEmail)
	require.Equal(t, f.annID, *team.CreatedByID)
	require.Equal(t, f.annEmail, *team.CreatedByEmail)
	require.Len(t, team.Members, 2)
	require.Equal(t, []string{f.annEmail, "owner"}, []string{team.Members[0].Email, team.Members[0].Role})
	require.Equal(t, []string{f.bobEmail, "viewer"}, []string{team.Members[1].Email, team.Members[1].Role})
	require.Len(t, team.Invitations, 2)
	require.Equal(t, []string{"revoked@example.com", "admin", "revoked"}, []string{team.Invitations[0].Email, team.Invitations[0].Role, team.Invitations[0].State})
	require.NotNil(t, team.Invitations[0].RevokedAt)
	require.Equal(t, []string{"pending@example.com", "member", "pending"}, []string{team.Invitations[1].Email, team.Invitations[1].Role, team.Invitations[1].State})
	require.Nil(t, team.Invitations[1].RevokedAt)
	require.Equal(t, f.annEmail, *team.Invitations[1].InvitedByEmail)

	r = b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/admin/organizations/%d", bobOrg), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	personal := handlerstest.DecodeAs[adminOrgJSON](t, r)
	require.Equal(t, "personal", personal.Kind)
	require.Equal(t, f.bobEmail, *personal.PersonalUserEmail)
	require.Empty(t, personal.Invitations)

	for _, path := range []string{fmt.Sprintf("/api/v1/admin/organizations/%d", f.team+1000), "/api/v1/admin/organizations/rocket"} {
		requireAPIRefusal(t, b.APICall(t, http.MethodGet, path, key, ""), http.StatusNotFound, "", path)
	}

	// The account's organizations, with its role in each.
	r = b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/admin/users/%d", f.bobID), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	type userOrgs struct {
		Organizations []struct {
			ID          int64  `json:"id"`
			Name        string `json:"name"`
			Kind        string `json:"kind"`
			Role        string `json:"role"`
			MemberCount int64  `json:"member_count"`
		} `json:"organizations"`
	}
	u := handlerstest.DecodeAs[userOrgs](t, r)
	require.Len(t, u.Organizations, 2)
	require.Equal(t, []any{bobOrg, "bob", "personal", "owner", int64(1)},
		[]any{u.Organizations[0].ID, u.Organizations[0].Name, u.Organizations[0].Kind, u.Organizations[0].Role, u.Organizations[0].MemberCount})
	require.Equal(t, []any{f.team, "Rocket Lab", "team", "viewer", int64(2)},
		[]any{u.Organizations[1].ID, u.Organizations[1].Name, u.Organizations[1].Kind, u.Organizations[1].Role, u.Organizations[1].MemberCount})
}
