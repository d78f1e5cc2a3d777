package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/queries"
)

// orgTeam is an organization with a member in each role, a user of
// another organization, and a cluster of the organization.
type orgTeam struct {
	orgID     int64
	clusterID int64
	tokenID   int64
	// clusterName is the cluster's name, which no outsider may see.
	clusterName string
	// clients and keys by role ("owner", "admin", "member", "viewer", and
	// "other": a user of another organization), the clients working in
	// the team and the keys made in it.
	clients map[string]*handlerstest.Client
	keys    map[string]string
	emails  map[string]string
}

var teamRoles = []string{"owner", "admin", "member", "viewer", "other"}

// newOrgTeam makes the team: its owner makes it in the console, the
// others are put in it in their roles (invitations are TestOrgInvitations'),
// and each switches to it and makes a write key there.
func newOrgTeam(t *testing.T, b *handlerstest.Bundle, name string) orgTeam {
	t.Helper()
	ctx := context.Background()
	q := queries.New(b.Pool)
	tm := orgTeam{clients: map[string]*handlerstest.Client{}, keys: map[string]string{}, emails: map[string]string{}}
	users := map[string]queries.User{}
	for _, role := range teamRoles {
		c, email := b.SignedUpUser(t, name+"-"+role)
		u, err := q.UserGetByEmail(ctx, email)
		require.NoError(t, err)
		tm.clients[role], users[role], tm.emails[role] = c, u, email
	}
	resp := tm.clients["owner"].Post("/orgs", "/orgs", url.Values{"name": {name}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT id FROM organizations WHERE created_by = $1 AND personal_of IS NULL", users["owner"].ID).Scan(&tm.orgID))
	for _, role := range []string{"admin", "member", "viewer"} {
		_, err := b.Pool.Exec(ctx, "INSERT INTO organization_members (org_id, user_id, role) VALUES ($1, $2, $3)", tm.orgID, users[role].ID, role)
		require.NoError(t, err)
		resp := tm.clients[role].Post("/orgs", fmt.Sprintf("/orgs/%d/switch", tm.orgID), nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	}
	for _, role := range teamRoles {
		tm.keys[role] = tm.clients[role].CreateScopedKey(role, "write")
	}
	// The cluster, made by the member; not ready, so that no action
	// waits on a control plane that is not there.
	cl, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{
		OrgID: pgtype.Int8{Int64: tm.orgID, Valid: true}, OwnerID: users["member"].ID, Name: "cl-" + name + "-q7x", Slug: name + "-team",
		KubernetesVersion: "v1.34.0", PublicAccessMode: "nodeport",
	})
	require.NoError(t, err)
	tm.clusterID, tm.clusterName = cl.ID, cl.Name
	tok, err := q.JoinTokenCreate(ctx, queries.JoinTokenCreateParams{
		ClusterID: cl.ID, TokenID: "abcdef", TokenHash: b.Box.MAC("join-token", []byte(name)),
		SealedToken: b.Box.Seal([]byte("abcdef.0123456789abcdef")),
	})
	require.NoError(t, err)
	tm.tokenID = tok.ID
	return tm
}

// clusterRoute is a route of one cluster with its parameters filled in.
func (tm orgTeam) clusterRoute(path string) string {
	r := strings.NewReplacer(":id", fmt.Sprint(tm.clusterID), ":name", "worker-1", ":joinToken", fmt.Sprint(tm.tokenID), ":op", "1")
	return r.Replace(path)
}

// asksChangePages are the console's pages that ask before a change of a
// cluster (its form, its confirmation): a viewer, who may not make the
// change, is refused the page too (403).
var asksChangePages = []string{
	"/clusters/:id/edit", "/clusters/:id/delete", "/clusters/:id/ingress/disable",
	"/clusters/:id/tokens/:joinToken/revoke", "/clusters/:id/nodes/:name/drain", "/clusters/:id/nodes/:name/delete",
}

// TestOrgRolesOnClusterRoutes is the role table over every route of a
// cluster, in the API and in the console: a member of another
// organization finds nothing (404, as for a cluster that does not exist);
// a viewer reads but changes nothing (403), and is refused the pages that
// ask before a change (asksChangePages); owners, admins and members are
// refused nothing; anonymous is sent to sign in (console) or refused
// (API, 401). The kubeconfig, which is the cluster's admin credential
// until members get their own, is refused to viewers.
// TestOrgRolesOnEveryRoute is the table of the other routes.
func TestOrgRolesOnClusterRoutes(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tm := newOrgTeam(t, b, "roles")

	anonymous := b.Client(t)
	notFound := b.APICall(t, http.MethodGet, "/api/v1/clusters/999999999", tm.keys["owner"], "")
	require.Equal(t, http.StatusNotFound, notFound.Status)

	apiRoutes, consoleRoutes := 0, 0
	var table []string
	for _, r := range b.Echo.Routes() {
		api := strings.HasPrefix(r.Path, "/api/v1/clusters/:id")
		console := strings.HasPrefix(r.Path, "/clusters/:id")
		if !api && !console {
			continue
		}
		if r.Method == http.MethodDelete && r.Path == "/api/v1/clusters/:id" {
			continue // deletes the cluster: below, last
		}
		if r.Method == http.MethodPost && r.Path == "/clusters/:id/delete" {
			continue // the same
		}
		path := tm.clusterRoute(r.Path)
		read := r.Method == http.MethodGet
		kubeconfig := strings.HasSuffix(r.Path, "/kubeconfig")
		asksChange := read && slices.Contains(asksChangePages, r.Path)
		row := fmt.Sprintf("%-7s %-55s", r.Method, r.Path)
		for _, role := range append(slices.Clone(teamRoles), "anonymous") {
			var status int
			var body, location string
			if role == "anonymous" {
				if api {
					apiRoutes++
					res := b.APICall(t, r.Method, path, "", "")
					status, body = res.Status, res.Body
				} else {
					consoleRoutes++
					status, body, location = consoleCall(t, anonymous, r.Method, path, "", true)
				}
			} else if api {
				apiRoutes++
				payload := ""
				if !read {
					payload = "{}"
				}
				res := b.APICall(t, r.Method, path, tm.keys[role], payload)
				status, body = res.Status, res.Body
			} else {
				consoleRoutes++
				c := tm.clients[role]
				if read {
					status, body = c.Get(path)
				} else {
					resp := c.Post("/", path, nil)
					status, body = resp.StatusCode, handlerstest.ReadBody(t, resp)
				}
			}
			where := fmt.Sprintf("%s %s as %s: %d %s", r.Method, path, role, status, firstLine(body))
			row += fmt.Sprintf(" %6d", status)
			switch {
			case role == "anonymous" && api:
				require.Equal(t, http.StatusUnauthorized, status, where)
			case role == "anonymous":
				require.Equal(t, http.StatusSeeOther, status, where)
				require.True(t, strings.HasPrefix(location, "/login"), where)
			case role == "other":
				require.Equal(t, http.StatusNotFound, status, where)
				require.NotContains(t, body, tm.clusterName, where)
				if api {
					require.Equal(t, "not_found", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, handlerstest.APIResponse{Body: body}).Error.Code, where)
				}
			case role == "viewer" && (!read || kubeconfig || asksChange):
				require.Equal(t, http.StatusForbidden, status, where)
			default:
				require.NotEqual(t, http.StatusForbidden, status, where)
				require.Less(t, status, 500, where)
				if api && status == http.StatusNotFound {
					require.NotEqual(t, notFound.Body, body, "the cluster is found: "+where)
				}
				if !api {
					require.NotContains(t, body, "ErrorClusterNotFound", where)
				}
			}
		}
		table = append(table, row)
	}
	require.Greater(t, apiRoutes, 6*10)
	slices.Sort(table)
	t.Logf("the role table (%d API and %d console requests):\n%-63s  owner  admin member viewer  other   anon\n%s",
		apiRoutes, consoleRoutes, "route", strings.Join(table, "\n"))
	require.Greater(t, consoleRoutes, 6*20)

	// The cluster list and a new cluster.
	for _, role := range teamRoles {
		list := b.APICall(t, http.MethodGet, "/api/v1/clusters", tm.keys[role], "")
		require.Equal(t, http.StatusOK, list.Status)
		require.Equal(t, role != "other", strings.Contains(list.Body, fmt.Sprintf(`"id":%d,`, tm.clusterID)), role)
	}
	made := b.APICall(t, http.MethodPost, "/api/v1/clusters", tm.keys["viewer"], `{"name":"nope","kubernetes_version":"v1.34.0"}`)
	require.Equal(t, http.StatusForbidden, made.Status, made.Body)

	// Any member but a viewer deletes it; the viewer and the outsider
	// cannot.
	del := "/api/v1/clusters/" + fmt.Sprint(tm.clusterID)
	require.Equal(t, http.StatusNotFound, b.APICall(t, http.MethodDelete, del, tm.keys["other"], "").Status)
	require.Equal(t, http.StatusForbidden, b.APICall(t, http.MethodDelete, del, tm.keys["viewer"], "").Status)
	res := b.APICall(t, http.MethodDelete, del, tm.keys["admin"], "")
	require.Equal(t, http.StatusAccepted, res.Status, res.Body)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s[:min(len(s), 200)]
}

// TestOrgViewerSeesNoActions: the console offers a viewer none of the
// actions it would refuse them, and a member all of them; the menu names
// the organization each works in.
func TestOrgViewerSeesNoActions(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tm := newOrgTeam(t, b, "readers")
	b.MarkReady(t, b.Cluster(t, tm.clusterID))
	pages := map[string][]string{
		"/clusters": {`data-testid="cluster-create-link"`},
		"/":         {`data-testid="dashboard-create-cluster"`},
		fmt.Sprintf("/clusters/%d", tm.clusterID): {
			`data-testid="cluster-settings"`, `data-testid="cluster-add-node"`, `data-testid="cluster-kubeconfig"`,
		},
		fmt.Sprintf("/clusters/%d/tokens", tm.clusterID): {`data-testid="join-token-form"`, `data-testid="join-token-revoke"`},
	}
	for path, actions := range pages {
		for _, role := range []string{"member", "viewer"} {
			code, body := tm.clients[role].Get(path)
			require.Equal(t, http.StatusOK, code, path)
			require.Contains(t, body, `data-testid="nav-orgs" title="Switch organization">readers</a>`, "%s %s", role, path)
			for _, a := range actions {
				if role == "viewer" {
					require.NotContains(t, body, a, "%s %s", role, path)
				} else {
					require.Contains(t, body, a, "%s %s", role, path)
				}
			}
		}
	}
	// The owner lets viewers have a (read-only) kubeconfig: the link shows.
	_, err := b.Pool.Exec(context.Background(), "UPDATE organizations SET viewer_kubeconfig = TRUE WHERE id = $1", tm.orgID)
	require.NoError(t, err)
	_, body := tm.clients["viewer"].Get(fmt.Sprintf("/clusters/%d", tm.clusterID))
	require.Contains(t, body, `data-testid="cluster-kubeconfig"`)
	require.NotContains(t, body, `data-testid="cluster-settings"`)
	// A member finds Delete in Settings, which a viewer is refused.
	code, body := tm.clients["member"].Get(fmt.Sprintf("/clusters/%d/edit", tm.clusterID))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="cluster-delete"`)
	code, _ = tm.clients["viewer"].Get(fmt.Sprintf("/clusters/%d/edit", tm.clusterID))
	require.Equal(t, http.StatusForbidden, code)
}
