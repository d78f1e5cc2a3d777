package browsertest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// focused is the focused element's test id, or its id when it has none.
const focused = `(document.activeElement.dataset.testid || document.activeElement.id || document.activeElement.tagName)`

// TestKeyboardAndLiveRegion: the console works from the keyboard, and
// tells screen readers what the live page adds.
//   - The first Tab reaches the skip link, which moves focus to the main
//     content.
//   - At a phone's width the menu button opens the navigation drawer with
//     focus on its first link; Escape closes it and gives focus back to
//     the button.
//   - A cluster event the live page adds to the timeline is said in the
//     live region.
func TestKeyboardAndLiveRegion(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, email := b.SignedUpUser(t, "keys")
	cl := b.NewCluster(t, c, "spoken")
	page := fmt.Sprintf("%s/clusters/%d", b.Server.URL, cl.ID)

	ctx := testenv.Browser(t)
	require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900)))
	browserSignIn(t, ctx, b.Server.URL, email, "password of keys")
	var first, afterSkip, hash string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(`[data-testid="cluster-events"]`, chromedp.ByQuery),
		chromedp.KeyEvent(kb.Tab),
		chromedp.Evaluate(focused, &first),
		chromedp.KeyEvent(kb.Enter),
		chromedp.Evaluate(focused, &afterSkip),
		chromedp.Evaluate(`location.hash`, &hash),
	))
	require.Equal(t, "skip-link", first, "the first Tab reaches the skip link")
	require.Equal(t, "main", afterSkip, "the skip link moves focus to the content")
	require.Equal(t, "#main", hash)

	// The live region says the event the poller adds.
	_, err := queries.New(b.Pool).ClusterEventCreate(context.Background(), queries.ClusterEventCreateParams{ClusterID: cl.ID, Level: "info", Reason: "Installing"})
	require.NoError(t, err)
	var said string
	pollCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Run(pollCtx, chromedp.Poll(`(() => {
		const t = document.getElementById('live-region').textContent;
		return t.includes('Installing the control plane') ? t : false;
	})()`, &said)), "the live region says the new event")
	require.Contains(t, said, "Installing the control plane.")

	// The drawer from the keyboard, at a phone's width.
	var inNav bool
	var expanded, afterEscape, closed string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.EmulateViewport(390, 800),
		chromedp.Navigate(b.Server.URL+"/clusters"),
		chromedp.WaitVisible(`[data-testid="nav-toggle"]`, chromedp.ByQuery),
		chromedp.Focus(`[data-testid="nav-toggle"]`, chromedp.ByQuery),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(`#sidenav a`, chromedp.ByQuery),
		chromedp.Evaluate(`document.activeElement.closest('#sidenav') !== null`, &inNav),
		chromedp.AttributeValue(`[data-testid="nav-toggle"]`, "aria-expanded", &expanded, nil, chromedp.ByQuery),
		chromedp.KeyEvent(kb.Escape),
		chromedp.Evaluate(focused, &afterEscape),
		chromedp.AttributeValue(`[data-testid="nav-toggle"]`, "aria-expanded", &closed, nil, chromedp.ByQuery),
	))
	require.True(t, inNav, "opening the drawer moves focus into it")
	require.Equal(t, "true", expanded)
	require.Equal(t, "nav-toggle", afterEscape, "Escape gives focus back to the menu button")
	require.Equal(t, "false", closed)
	var navHidden bool
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`getComputedStyle(document.getElementById('sidenav')).visibility === 'hidden' || document.getElementById('sidenav').getBoundingClientRect().right <= 0`, &navHidden)))
	require.True(t, navHidden, "the closed drawer is off the screen")
}
