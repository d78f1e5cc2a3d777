package browsertest_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAdminEdgeInBrowser: an admin creates an edge token in the browser,
// an edge (the agent beside a real HAProxy) runs with it, and the edge
// page shows the instance come up, in step, without a reload.
func TestAdminEdgeInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	_, adminEmail := b.SignedUpAdmin(t, "edge-clicker")
	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, adminEmail, "password of edge-clicker")

	var token string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/admin/users"),
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

	b.RunEdge(t, "edge-in-browser", token)

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
