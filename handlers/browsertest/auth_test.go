package browsertest_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestSignUpAndSignInInBrowser is the first journey: sign up, get the code
// by email, verify, sign out, sign in with the password.
func TestSignUpAndSignInInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := testenv.Browser(t)
	email := handlerstest.UniqueEmail("browser")

	var greeting string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/"),
		chromedp.Click(`[data-testid="nav-signup"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="signup-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#name`, "Ada Lovelace", chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "analytical engine", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="signup-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="verify-form"]`, chromedp.ByQuery),
	))
	msgs := b.WaitMessages(t, email, 1)
	require.Contains(t, msgs[0].Subject, "Your KubeBYON code")
	code := handlerstest.CodeFrom(t, msgs[0])

	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#code`, code, chromedp.ByQuery),
		chromedp.Submit(`[data-testid="verify-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dashboard-greeting"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="dashboard-greeting"]`, &greeting, chromedp.ByQuery),
	))
	require.Equal(t, "Welcome, Ada Lovelace", greeting)

	require.NoError(t, chromedp.Run(ctx,
		// Signing out is in the user menu.
		chromedp.Click(`[data-testid="user-menu"] summary`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="sign-out"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="nav-login"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="nav-login"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "wrong password!", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="form-error"]`, chromedp.ByQuery),
	))
	var formErr, typedEmail string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Text(`[data-testid="form-error"]`, &formErr, chromedp.ByQuery),
		chromedp.Value(`#email`, &typedEmail, chromedp.ByQuery),
	))
	require.Equal(t, "The email or password is wrong.", formErr)
	require.Equal(t, email, typedEmail, "the form keeps what the user typed")

	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#password`, "analytical engine", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dashboard-greeting"]`, chromedp.ByQuery),
	))

	// The new sign-ins were reported by email (security notices are on by default).
	msgs = b.WaitMessages(t, email, 3)
	require.Equal(t, "New sign-in to your KubeBYON account", msgs[len(msgs)-1].Subject)
}
