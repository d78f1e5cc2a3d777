package browsertest_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestWebhooksInBrowser: a user adds a Slack webhook and sends a test,
// whose result htmx puts under the channel without leaving the page.
func TestWebhooksInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "browser-hook-admin")
	resp := admin.Post("/admin/notifications", "/admin/notifications/network", url.Values{"allowedCIDRs": {"127.0.0.1/32"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, email := b.SignedUpUser(t, "browser-hooked")
	srv, got := handlerstest.HookServer(t, "ok")
	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, email, "password of browser-hooked")

	var flash, result, location string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/settings/notifications"),
		chromedp.WaitVisible(`[data-testid="webhook-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#name`, "team chat", chromedp.ByQuery),
		chromedp.SetValue(`#kind`, "slack", chromedp.ByQuery),
		chromedp.SendKeys(`#url`, srv.URL+"/services/T/B/X", chromedp.ByQuery),
		chromedp.Click(`[data-testid="webhook-add"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.Click(`[data-testid="webhook-test"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="webhook-test-delivered"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="webhook-test-delivered"]`, &result, chromedp.ByQuery),
		chromedp.Location(&location),
	))
	require.Equal(t, "The webhook was added.", strings.TrimSpace(flash))
	require.Contains(t, result, "The test message was delivered (HTTP 200).")
	require.Equal(t, b.Server.URL+"/settings/notifications", location, "htmx swapped the result in")
	r := <-got
	require.Contains(t, string(r.Body), `"text":"KubeBYON test message`)
}
