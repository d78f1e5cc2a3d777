package browsertest_test

import (
	"sort"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/apispec"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// drawnOperations scrolls the reference page from top to bottom and
// returns the ids of every operation block drawn on the way. Swagger UI
// draws a description of 150 rows or more (tags and operations) virtually:
// only the blocks near the viewport are in the document at any time.
const drawnOperations = `(async () => {
  const seen = new Set();
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 30)));
  for (let y = 0; ; y += window.innerHeight / 2) {
    window.scrollTo(0, y);
    await frame(); await frame();
    document.querySelectorAll('.opblock[id^="operations-"]').forEach(e => seen.add(e.id));
    if (y > document.documentElement.scrollHeight) break;
  }
  return Array.from(seen);
})()`

// TestAPIReferenceInBrowser: the keys page links the API reference, which
// draws every operation of the description with the binary's own Swagger
// UI, and an operation's link opens its details.
func TestAPIReferenceInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, email := b.SignedUpUser(t, "reader")
	ctx := testenv.Browser(t)

	ops, err := apispec.Operations()
	require.NoError(t, err)
	var want []string
	for id, op := range ops {
		want = append(want, "operations-"+op.Tag+"-"+id)
	}
	sort.Strings(want)

	var drawn []string
	var opened string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/settings/api-keys"),
		chromedp.WaitVisible(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "password of reader", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="api-reference-link"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="api-reference-link"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.opblock-summary`, chromedp.ByQuery),
		chromedp.Evaluate(drawnOperations, &drawn, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
			return p.WithAwaitPromise(true)
		}),
		// An operation's link (deep linking) scrolls to it and opens it.
		chromedp.Navigate(b.Server.URL+"/settings/api-keys"),
		chromedp.Navigate(b.Server.URL+"/api/reference#/join-tokens/createJoinToken"),
		chromedp.WaitVisible(`#operations-join-tokens-createJoinToken .opblock-body`, chromedp.ByQuery),
		chromedp.Text(`#operations-join-tokens-createJoinToken .opblock-body`, &opened, chromedp.ByQuery),
	))
	sort.Strings(drawn)
	require.Equal(t, want, drawn, "every operation of the description is drawn once")
	require.Contains(t, opened, "max_uses")
	require.Contains(t, opened, "Idempotency-Key")
}
