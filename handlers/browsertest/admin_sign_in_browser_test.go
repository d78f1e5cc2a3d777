package browsertest_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAdminSignInInBrowser: an admin opens the sign-in providers from the
// settings' sub-navigation, sets up the company's OpenID Connect provider
// and signs out; the next person clicks its button on the sign-in page and
// lands on the dashboard of a new account.
func TestAdminSignInInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, adminEmail := b.SignedUpAdmin(t, "browser-sso-admin")
	idp := testenv.NewOIDCProvider(t, b.Server.URL+"/auth/oidc/callback")
	idp.SignIn(testenv.OIDCUser{Subject: "browser-1", Email: handlerstest.UniqueEmail("browser-sso"), EmailVerified: true, GivenName: "Grace", FamilyName: "SSO"})
	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, adminEmail, "password of browser-sso-admin")

	var callback, flash, source, greeting string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/admin/settings"),
		chromedp.Click(`[data-testid="admin-settings-nav"] a[href="/admin/settings/sign-in"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="sign-in-form"]`, chromedp.ByQuery),
		chromedp.Value(`[data-testid="sign-in-callback-oidc"]`, &callback, chromedp.ByQuery),
		chromedp.SendKeys(`#oidc-label`, "Company SSO", chromedp.ByQuery),
		chromedp.SendKeys(`#oidc-issuer`, idp.Issuer, chromedp.ByQuery),
		chromedp.SendKeys(`#oidc-clientId`, idp.ClientID, chromedp.ByQuery),
		chromedp.SendKeys(`#oidc-clientSecret`, idp.ClientSecret, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "password of browser-sso-admin", chromedp.ByQuery),
		chromedp.Click(`[data-testid="sign-in-save"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.AttributeValue(`[data-testid="sign-in-oidc"]`, "data-source", &source, nil, chromedp.ByQuery),
	))
	require.Equal(t, b.Server.URL+"/auth/oidc/callback", callback)
	require.Equal(t, "Sign-in providers saved.", strings.TrimSpace(flash))
	require.Equal(t, "settings", source)

	require.NoError(t, chromedp.Run(ctx,
		// Signing out is in the user menu.
		chromedp.Click(`[data-testid="user-menu"] summary`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="sign-out"]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`[data-testid="sign-out"]`, chromedp.ByQuery),
		chromedp.Navigate(b.Server.URL+"/login"),
		chromedp.Click(`[data-testid="oauth-oidc"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dashboard-greeting"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="dashboard-greeting"]`, &greeting, chromedp.ByQuery),
	))
	require.Equal(t, "Welcome, Grace SSO", greeting)
}
