package browsertest_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestHomePageInBrowser loads the home page in Chromium: the layout renders
// with its stylesheet, htmx loads and fetches the status panel.
func TestHomePageInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := testenv.Browser(t)

	var brand, status, lang string
	var htmxLoaded bool
	var picoApplied bool
	err := chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/"),
		chromedp.Text(`[data-testid="brand"]`, &brand, chromedp.ByQuery),
		chromedp.Evaluate(`typeof window.htmx === "object" && typeof htmx.ajax === "function"`, &htmxLoaded),
		// Pico sets a system font stack on the body; the browser default is serif.
		chromedp.Evaluate(`!getComputedStyle(document.body).fontFamily.startsWith("serif") && getComputedStyle(document.body).fontFamily.includes("system-ui")`, &picoApplied),
		chromedp.Evaluate(`document.documentElement.lang`, &lang),
		// Only htmx puts the panel there, from /status.
		chromedp.Text(`[data-testid="status-panel"]`, &status, chromedp.ByQuery),
	)
	require.NoError(t, err)
	require.Equal(t, "KubeBYON", brand)
	require.True(t, htmxLoaded, "htmx did not load")
	require.True(t, picoApplied, "the CSS framework's styles are not applied")
	require.Equal(t, "en", lang)
	require.Contains(t, status, "The platform is up")
}
