package browsertest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestClusterStreamInBrowser: the live cluster page shows a new event
// through its stream while its poller rests; once the stream is dropped
// (it ends after its lifetime, and the browser cannot connect again), the
// poller takes over and shows the next event.
func TestClusterStreamInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t, func(d *handlers.Deps) { d.StreamLifetime = 8 * time.Second })
	_, email := b.SignedUpUser(t, "streamer")
	id := b.InsertCluster(t, b.UserID(t, email), "streamed", "streamed-b1", "v1.34.0", "nodeport", "pending")
	q := queries.New(b.Pool)
	require.Eventually(t, b.Live.Listening, 10*time.Second, 20*time.Millisecond)

	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, email, "password of streamer")
	var polls, messages int
	require.NoError(t, chromedp.Run(ctx,
		network.Enable(),
		chromedp.Navigate(fmt.Sprintf("%s/clusters/%d", b.Server.URL, id)),
		chromedp.WaitReady(`#cluster-poller`, chromedp.ByQuery),
		// Counts the poller's requests that went out (beforeSend: not
		// those app.js cancels), and the stream's messages.
		chromedp.Evaluate(`window.polls = 0; window.sseMessages = 0;
			document.addEventListener('htmx:beforeSend', function (e) { if (e.detail.elt.id === 'cluster-poller') window.polls++ });
			document.addEventListener('htmx:sseMessage', function () { window.sseMessages++ });`, nil),
		chromedp.WaitReady(`#cluster-stream[data-stream-open]`, chromedp.ByQuery),
		// The DNS and edge panel has loaded; marked, to see that the
		// stream's updates keep it rather than draw it anew.
		chromedp.WaitNotPresent(`[data-testid="cluster-endpoint-panel"] [aria-busy]`, chromedp.ByQuery),
		chromedp.Evaluate(`window.panelLoads = 0;
			document.addEventListener('htmx:beforeSend', function (e) { if (e.detail.elt.dataset.testid === 'cluster-endpoint-panel') window.panelLoads++ });
			document.querySelector('[data-testid="cluster-endpoint-panel"]').dataset.kept = 'yes';`, nil),
		// Counted from the stream's opening on.
		chromedp.Evaluate(`window.polls = 0; window.sseMessages = 0`, nil),
	))

	require.NoError(t, clusters.Event(t.Context(), q, id, "info", "Installing", "vcluster 0.30.0"))
	require.NoError(t, chromedp.Run(ctx,
		chromedp.WaitVisible(`#cluster-events [data-reason="Installing"]`, chromedp.ByQuery),
		chromedp.Evaluate(`window.polls`, &polls),
		chromedp.Evaluate(`window.sseMessages`, &messages),
	))
	require.Zero(t, polls, "the poller rested while the stream was open")
	require.Positive(t, messages, "the stream brought the event")
	var kept string
	var panelLoads int
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`document.querySelector('[data-testid="cluster-endpoint-panel"]').dataset.kept || ''`, &kept),
		chromedp.Evaluate(`window.panelLoads`, &panelLoads),
	))
	require.Equal(t, "yes", kept, "the stream's update kept the DNS and edge panel as it was")
	require.Zero(t, panelLoads, "and did not make it ask again")

	// The stream drops at the end of its lifetime and cannot come back.
	require.NoError(t, chromedp.Run(ctx,
		network.SetBlockedURLs([]string{"*/stream*"}),
		chromedp.WaitReady(`#cluster-stream:not([data-stream-open])`, chromedp.ByQuery),
	))
	require.NoError(t, clusters.Event(t.Context(), q, id, "info", "WaitingForControlPlane", "not ready"))
	var rows, before int
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`window.sseMessages`, &before),
		chromedp.WaitVisible(`#cluster-events [data-reason="WaitingForControlPlane"]`, chromedp.ByQuery),
		chromedp.Evaluate(`window.polls`, &polls),
		chromedp.Evaluate(`window.sseMessages`, &messages),
		chromedp.Evaluate(`document.querySelectorAll('#cluster-events [data-reason="Installing"]').length`, &rows),
	))
	require.Equal(t, before, messages, "not the stream")
	require.Positive(t, polls, "the poller brought the event")
	require.Equal(t, 1, rows, "each event shown once")
}
