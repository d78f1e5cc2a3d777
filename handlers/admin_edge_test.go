package handlers_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

var newEdgeToken = regexp.MustCompile(`id="new-edge-token"[^>]* value="(kbe_[a-z2-7]{8}_[a-z2-7]{32})"`)

// TestAdminEdgeTokens: an admin makes an edge token on /admin/edge (shown
// once, with the edge's command line), which the edge config API then
// takes; a form posts once; a name is required; the token is revoked from
// the page and stops working. Users who are not admins get 404.
func TestAdminEdgeTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, adminEmail := b.signedUpAdmin(t, "edge-admin")
	user, _ := b.signedUpUser(t, "edge-user")

	code, _ := user.get("/admin/edge")
	require.Equal(t, http.StatusNotFound, code)

	code, body := admin.get("/admin/edge")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-nav-edge" aria-current="page"`)
	require.Contains(t, body, `data-testid="edge-instances-empty"`)
	require.Contains(t, body, `data-testid="edge-tokens-empty"`)

	resp := admin.postShownForm("/admin/edge", "/admin/edge/tokens", url.Values{"name": {" "}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	page := readBody(t, resp)
	require.Contains(t, page, "Give the token a name.")

	resp = admin.postShownForm("/admin/edge", "/admin/edge/tokens", url.Values{"name": {"edge-a"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	page = readBody(t, resp)
	m := newEdgeToken.FindStringSubmatch(page)
	require.NotNil(t, m, page)
	token := m[1]
	require.Contains(t, html.UnescapeString(page), fmt.Sprintf("KUBEBYON_EDGE_TOKEN=%s kubebyon edge --platform-url %s", token, b.server.URL))
	r := b.apiCall(t, http.MethodGet, "/api/v1/edge/config", token, "")
	require.Equal(t, http.StatusOK, r.status, r.body)

	// The same form again (a reload) makes no second token.
	form := url.Values{"name": {"edge-b"}}
	resp = admin.postShownForm("/admin/edge", "/admin/edge/tokens", form)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	again, err := admin.http.PostForm(b.server.URL+"/admin/edge/tokens", form)
	require.NoError(t, err)
	again.Body.Close()
	require.Equal(t, http.StatusSeeOther, again.StatusCode)
	tokens, err := queries.New(b.pool).EdgeTokenList(context.Background())
	require.NoError(t, err)
	require.Len(t, tokens, 2)
	var a queries.EdgeToken
	for _, tk := range tokens {
		if tk.Name == "edge-a" {
			a = tk
		}
	}

	_, body = admin.get("/admin/edge")
	require.Contains(t, body, fmt.Sprintf(`data-token-id="%d"`, a.ID))
	code, body = admin.get(fmt.Sprintf("/admin/edge/tokens/%d/revoke", a.ID))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, a.Prefix)
	resp = admin.post(fmt.Sprintf("/admin/edge/tokens/%d/revoke", a.ID), fmt.Sprintf("/admin/edge/tokens/%d/revoke", a.ID), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.get("/admin/edge")
	require.Contains(t, body, "Edge token revoked.")
	require.Contains(t, body, `data-testid="edge-token-revoked"`)
	r = b.apiCall(t, http.MethodGet, "/api/v1/edge/config", token, "")
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Subset(t, b.audits(t, b.userID(t, adminEmail)), []string{"edge_token.create", "edge_token.revoke"})

	code, _ = admin.get("/admin/edge/tokens/999999/revoke")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = user.get(fmt.Sprintf("/admin/edge/tokens/%d/revoke", a.ID))
	require.Equal(t, http.StatusNotFound, code)
}

// TestAdminEdgeInBrowser: an admin creates an edge token in the browser,
// an edge (the agent beside a real HAProxy) runs with it, and the edge
// page shows the instance come up, in step, without a reload.
func TestAdminEdgeInBrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	_, adminEmail := b.signedUpAdmin(t, "edge-clicker")
	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.server.URL, adminEmail, "password of edge-clicker")

	var token string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.server.URL+"/admin/users"),
		chromedp.Click(`[data-testid="admin-nav-edge"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="edge-instances-empty"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#name`, "browser-edge", chromedp.ByQuery),
		chromedp.Click(`[data-testid="edge-token-create"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="new-edge-token"]`, chromedp.ByQuery),
		chromedp.Value(`[data-testid="new-edge-token"]`, &token, chromedp.ByQuery),
		chromedp.Click(`[data-testid="edge-token-done"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="edge-instances-empty"]`, chromedp.ByQuery),
		chromedp.Evaluate(`window.kubebyonMark = 1`, nil),
	))
	require.Regexp(t, `^kbe_`, token)

	b.runEdge(t, "edge-in-browser", token)

	var name string
	var samePage bool
	require.NoError(t, chromedp.Run(ctx,
		chromedp.WaitVisible(`[data-testid="edge-in-step"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="edge-instance"] td`, &name, chromedp.ByQuery),
		chromedp.Evaluate(`window.kubebyonMark === 1`, &samePage),
	))
	require.Contains(t, name, "edge-in-browser")
	require.True(t, samePage, "the edges refresh themselves")
}
