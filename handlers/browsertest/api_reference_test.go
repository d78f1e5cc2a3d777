package browsertest_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAPIReferenceInBrowser: the keys page links the API reference, which
// renders the description's operations with the binary's own Swagger UI,
// and opens an operation's details.
func TestAPIReferenceInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, email := b.SignedUpUser(t, "reader")
	ctx := testenv.Browser(t)

	var summaries []string
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
		chromedp.Evaluate(`Array.from(document.querySelectorAll('.opblock-summary-description')).map(e => e.textContent)`, &summaries),
		chromedp.Click(`#operations-join-tokens-createJoinToken .opblock-summary`, chromedp.ByQuery),
		chromedp.WaitVisible(`#operations-join-tokens-createJoinToken .opblock-body`, chromedp.ByQuery),
		chromedp.Text(`#operations-join-tokens-createJoinToken .opblock-body`, &opened, chromedp.ByQuery),
	))
	joined := strings.Join(summaries, "\n")
	for _, want := range []string{"Create a cluster", "Make a join token, with the command that joins a machine", "A drain or deletion as it stands"} {
		require.Contains(t, joined, want)
	}
	require.Contains(t, opened, "max_uses")
	require.Contains(t, opened, "Idempotency-Key")
}
