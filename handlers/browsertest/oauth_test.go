package browsertest_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestOAuthSignInInBrowser clicks "Sign in with GitHub" and lands on the
// dashboard of a new account.
func TestOAuthSignInInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupOAuth(t)
	b.GitHub.SignIn(handlerstest.Person{ID: "1001", Login: "browser", Name: "Browser Octo", Email: handlerstest.UniqueEmail("oauth-browser"), Verified: true})
	ctx := testenv.Browser(t)

	var greeting, flash string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/login"),
		chromedp.Click(`[data-testid="oauth-github"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dashboard-greeting"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="dashboard-greeting"]`, &greeting, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
	))
	require.Equal(t, "Welcome, Browser Octo", greeting)
	require.Contains(t, flash, "Welcome to KubeBYON!")
}
