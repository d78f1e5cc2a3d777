package browsertest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// clusterSpecLayout measures the overview's key/value lists: the
// narrowest value (a value wrapped a letter per line is a few pixels
// wide), and the hints whose top is above their value's bottom (a hint
// drawn over its value).
const clusterSpecLayout = `(() => {
	const dds = [...document.querySelectorAll('dl.kv dd')];
	const narrowest = Math.min(...dds.map(dd => dd.getBoundingClientRect().width));
	const overlaps = [];
	for (const dd of dds) {
		const value = dd.querySelector('.kv-value');
		const hint = dd.querySelector('.cluster-hint');
		if (value && hint && hint.getBoundingClientRect().top < value.getBoundingClientRect().bottom - 1) {
			overlaps.push(dd.dataset.testid || dd.textContent.trim().slice(0, 40));
		}
	}
	return {narrowest, overlaps, height: document.documentElement.scrollHeight};
})()`

// TestClusterOverviewInBrowser: at a phone's width and a laptop's, the
// overview of a ready cluster without nodes fits the screen, its values
// are not wrapped a letter per line, its hints sit under their values;
// the "Add your first node" card makes a join command in place, which
// the copy button copies, with the token's live diagnostics under it.
func TestClusterOverviewInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "overview")
	cl, _ := b.ReadyVirtualCluster(t, c, "overview")
	page := fmt.Sprintf("%s/clusters/%d", b.Server.URL, cl.ID)
	for _, width := range []int64{390, 1280} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			ctx := testenv.Browser(t)
			require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(width, 900)))
			browserSignIn(t, ctx, b.Server.URL, email, "password of overview")
			var layout struct {
				Narrowest float64
				Overlaps  []string
				Height    float64
			}
			var out []string
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Navigate(page),
				chromedp.WaitVisible(`[data-testid="first-node"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`[data-testid="cluster-endpoint-status"]`, chromedp.ByQuery),
				chromedp.Evaluate(clusterSpecLayout, &layout),
				chromedp.Evaluate(overflowing, &out),
			))
			// The phone's closed navigation drawer waits, hidden, left of
			// the screen (the shell's, app.css).
			out = slices.DeleteFunc(out, func(s string) bool { return strings.HasPrefix(s, "nav[sidenav]") })
			require.Empty(t, out, "the overview at %dpx", width)
			require.Greater(t, layout.Narrowest, 150.0, "no value is squeezed to a column of letters at %dpx", width)
			require.Empty(t, layout.Overlaps, "hints sit under their values at %dpx", width)
			require.Less(t, layout.Height, 4000.0, "the page at %dpx", width)
		})
	}

	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, email, "password of overview")
	var command string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(`[data-testid="first-node-create"]`, chromedp.ByQuery),
		chromedp.Evaluate(`window.kubebyonSamePage = true`, nil),
		chromedp.Click(`[data-testid="first-node-create"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="first-node"] [data-testid="join-command"]`, chromedp.ByQuery),
		chromedp.Value(`[data-testid="join-command"]`, &command, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="first-node"] [data-testid="copy-join-command"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="first-node"] [data-testid="join-token-live"]`, chromedp.ByQuery),
	))
	m := handlerstest.JoinCommandToken.FindStringSubmatch(command)
	require.NotNil(t, m, command)
	var samePage bool
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.kubebyonSamePage === true`, &samePage)))
	require.True(t, samePage, "the command came in place, without a reload")
}
