package handlers_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/queries"
)

var newEdgeToken = regexp.MustCompile(`id="new-edge-token"[^>]* value="(kbe_[a-z2-7]{8}_[a-z2-7]{32})"`)

// TestAdminEdgeTokens: an admin makes an edge token on /admin/edge (shown
// once, with the edge's command line), which the edge config API then
// takes; a form posts once; a name is required; the token is revoked from
// the page and stops working. Users who are not admins get 404.
func TestAdminEdgeTokens(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, adminEmail := b.SignedUpAdmin(t, "edge-admin")
	user, _ := b.SignedUpUser(t, "edge-user")

	code, _ := user.Get("/admin/edge")
	require.Equal(t, http.StatusNotFound, code)

	code, body := admin.Get("/admin/edge")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-nav-edge" aria-current="page"`)
	require.Contains(t, body, `data-testid="edge-instances-empty"`)
	require.Contains(t, body, `data-testid="edge-tokens-empty"`)

	resp := admin.PostShownForm("/admin/edge", "/admin/edge/tokens", url.Values{"name": {" "}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	page := handlerstest.ReadBody(t, resp)
	require.Contains(t, page, "Give the token a name.")

	resp = admin.PostShownForm("/admin/edge", "/admin/edge/tokens", url.Values{"name": {"edge-a"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	page = handlerstest.ReadBody(t, resp)
	m := newEdgeToken.FindStringSubmatch(page)
	require.NotNil(t, m, page)
	token := m[1]
	require.Contains(t, html.UnescapeString(page), fmt.Sprintf("KUBEBYON_EDGE_TOKEN=%s kubebyon edge --platform-url %s", token, b.Server.URL))
	r := b.APICall(t, http.MethodGet, "/api/v1/edge/config", token, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)

	// The same form again (a reload) makes no second token.
	form := url.Values{"name": {"edge-b"}}
	resp = admin.PostShownForm("/admin/edge", "/admin/edge/tokens", form)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	again, err := admin.HTTP.PostForm(b.Server.URL+"/admin/edge/tokens", form)
	require.NoError(t, err)
	again.Body.Close()
	require.Equal(t, http.StatusSeeOther, again.StatusCode)
	tokens, err := queries.New(b.Pool).EdgeTokenList(context.Background())
	require.NoError(t, err)
	require.Len(t, tokens, 2)
	var a queries.EdgeToken
	for _, tk := range tokens {
		if tk.Name == "edge-a" {
			a = tk
		}
	}

	_, body = admin.Get("/admin/edge")
	require.Contains(t, body, fmt.Sprintf(`data-token-id="%d"`, a.ID))
	code, body = admin.Get(fmt.Sprintf("/admin/edge/tokens/%d/revoke", a.ID))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, a.Prefix)
	resp = admin.Post(fmt.Sprintf("/admin/edge/tokens/%d/revoke", a.ID), fmt.Sprintf("/admin/edge/tokens/%d/revoke", a.ID), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.Get("/admin/edge")
	require.Contains(t, body, "Edge token revoked.")
	require.Contains(t, body, `data-testid="edge-token-revoked"`)
	r = b.APICall(t, http.MethodGet, "/api/v1/edge/config", token, "")
	require.Equal(t, http.StatusUnauthorized, r.Status)
	require.Subset(t, b.Audits(t, b.UserID(t, adminEmail)), []string{"edge_token.create", "edge_token.revoke"})

	code, _ = admin.Get("/admin/edge/tokens/999999/revoke")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = user.Get(fmt.Sprintf("/admin/edge/tokens/%d/revoke", a.ID))
	require.Equal(t, http.StatusNotFound, code)
}
