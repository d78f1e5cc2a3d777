package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestOAuthGitHubSignUpAndSignInAgain: a verified GitHub email nobody has
// makes an account; the same GitHub account later signs in to it.
func TestOAuthGitHubSignUpAndSignInAgain(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupOAuth(t)
	email := handlerstest.UniqueEmail("octo")
	b.GitHub.SignIn(handlerstest.Person{ID: "4242", Login: "octocat", Name: "Octo Cat", Email: email, Verified: true})

	c := b.Client(t)
	require.Equal(t, "/", c.SignInWith("github"))
	q := b.GitHub.LastAuthorize()
	require.Equal(t, "read:user user:email", q.Get("scope"))
	require.Equal(t, b.Server.URL+"/auth/github/callback", q.Get("redirect_uri"))
	_, body := c.Get("/")
	require.Contains(t, body, `data-testid="dashboard-greeting">Welcome, Octo Cat<`)
	require.Contains(t, body, "Your account was made with the email address your provider verified.")

	a := b.Account(t, email)
	require.Equal(t, handlerstest.AccountRow{ID: a.ID, Name: "Octo Cat", HasPassword: false, Verified: true}, a)
	require.Equal(t, []string{"github:4242:" + email}, b.Identities(t, a.ID))
	require.Equal(t, []string{"user.signup:github", "user.sign_in:github"}, b.AuditTrail(t, a.ID))

	// Another browser, the same GitHub account: the same KubeBYON account.
	c2 := b.Client(t)
	require.Equal(t, "/", c2.SignInWith("github"))
	_, body = c2.Get("/")
	require.Contains(t, body, `data-testid="dashboard-greeting">Welcome, Octo Cat<`)
	require.NotContains(t, body, "Your account was made")
	require.Equal(t, 1, b.Count(t, "users"))
	require.Equal(t, []string{"user.signup:github", "user.sign_in:github", "user.sign_in:github"}, b.AuditTrail(t, a.ID))

	// A disabled account stays shut.
	_, err := b.Pool.Exec(context.Background(), "UPDATE users SET disabled_at = now() WHERE id = $1", a.ID)
	require.NoError(t, err)
	c3 := b.Client(t)
	require.Equal(t, "/login", c3.SignInWith("github"))
	_, body = c3.Get("/login")
	require.Contains(t, body, "This account is disabled.")
	require.Len(t, b.AuditTrail(t, a.ID), 3)
}

// TestOAuthGoogleSignUp signs up through the OpenID Connect provider.
func TestOAuthGoogleSignUp(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupOAuth(t)
	email := handlerstest.UniqueEmail("grace")
	b.Google.SignIn(handlerstest.Person{ID: "108234567890", Name: "Grace Hopper", Email: email, Verified: true})

	c := b.Client(t)
	require.Equal(t, "/", c.SignInWith("google"))
	q := b.Google.LastAuthorize()
	require.Equal(t, "openid email profile", q.Get("scope"))
	require.Equal(t, b.Server.URL+"/auth/google/callback", q.Get("redirect_uri"))
	require.Equal(t, "S256", q.Get("code_challenge_method"), "PKCE, checked at the exchange")
	require.NotEmpty(t, q.Get("nonce"), "the ID token's nonce is checked")
	_, body := c.Get("/")
	require.Contains(t, body, `data-testid="dashboard-greeting">Welcome, Grace Hopper<`)

	a := b.Account(t, email)
	require.True(t, a.Verified)
	require.False(t, a.HasPassword)
	require.Equal(t, []string{"google:108234567890:" + email}, b.Identities(t, a.ID))
	require.Equal(t, []string{"user.signup:google", "user.sign_in:google"}, b.AuditTrail(t, a.ID))
}

// TestOAuthLinkExistingAccount: a verified email that belongs to an account
// links only once the account's password is given.
func TestOAuthLinkExistingAccount(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupOAuth(t)
	_, email := b.SignedUpUser(t, "linker")
	a := b.Account(t, email)
	// GitHub spells the address in capitals: still the same account.
	b.GitHub.SignIn(handlerstest.Person{ID: "777", Login: "linker", Name: "Someone Else", Email: strings.ToUpper(email), Verified: true})

	c := b.Client(t)
	require.Equal(t, "/auth/link", c.SignInWith("github"))
	code, body := c.Get("/auth/link")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="oauth-link-heading">Link your GitHub account to `+email+`<`)

	resp := c.Post("/auth/link", "/auth/link", url.Values{"password": {"not the password"}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-password">That password is not right.<`)
	require.Empty(t, b.Identities(t, a.ID))
	_, body = c.Get("/")
	require.NotContains(t, body, "dashboard-greeting")

	resp = c.Post("/auth/link", "/auth/link", url.Values{"password": {"password of linker"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, "/", resp.Header.Get("Location"))
	_, body = c.Get("/")
	require.Contains(t, body, `data-testid="dashboard-greeting">Welcome, linker<`, "the account keeps its name")
	require.Contains(t, body, "Your accounts are linked")
	require.Equal(t, []string{"github:777:" + email}, b.Identities(t, a.ID))
	trail := b.AuditTrail(t, a.ID)
	require.Equal(t, []string{"user.link_identity:github", "user.sign_in:github"}, trail[len(trail)-2:])

	// The pending link was used up; the next GitHub sign-in goes straight in.
	resp, _ = c.FetchURL(c.Base + "/auth/link")
	require.Equal(t, "/", resp.Header.Get("Location"))
	require.Equal(t, "/", b.Client(t).SignInWith("github"))
	require.Equal(t, 1, b.Count(t, "users"))
}

// TestOAuthLinkAccountWithoutPassword: an account made with Google has no
// password to prove it with; signed in with Google, the same browser links
// GitHub.
func TestOAuthLinkAccountWithoutPassword(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupOAuth(t)
	email := handlerstest.UniqueEmail("nopassword")
	b.Google.SignIn(handlerstest.Person{ID: "g-1", Name: "Only Google", Email: email, Verified: true})
	b.GitHub.SignIn(handlerstest.Person{ID: "99", Login: "onlygoogle", Email: email, Verified: true})
	withGoogle := b.Client(t)
	require.Equal(t, "/", withGoogle.SignInWith("google"))

	c := b.Client(t)
	require.Equal(t, "/auth/link", c.SignInWith("github"))
	_, body := c.Get("/auth/link")
	require.Contains(t, body, "That account has no password. Sign in to it with Google first")
	require.NotContains(t, body, "oauth-link-form")
	// The page has no form; a password posted anyway opens nothing.
	resp := c.Post("/login", "/auth/link", url.Values{"password": {"any password at all"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	require.Equal(t, "/", withGoogle.SignInWith("github"))
	_, body = withGoogle.Get("/")
	require.Contains(t, body, "Your accounts are linked")
	a := b.Account(t, email)
	require.Equal(t, []string{"github:99:" + email, "google:g-1:" + email}, b.Identities(t, a.ID))
	require.Equal(t, []string{"user.signup:google", "user.sign_in:google", "user.link_identity:github"}, b.AuditTrail(t, a.ID))
	require.Equal(t, "/", b.Client(t).SignInWith("github"))
}

// TestOAuthClaimsUnverifiedAccount: an address someone signed up with but
// never verified goes to the person the provider vouches for, without the
// sign-up's password.
func TestOAuthClaimsUnverifiedAccount(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupOAuth(t)
	email := handlerstest.UniqueEmail("claimed")
	handlerstest.SignUp(t, b.Client(t), email, "Squatter", "squatter password")
	b.GitHub.SignIn(handlerstest.Person{ID: "31", Login: "owner", Name: "Real Owner", Email: email, Verified: true})

	require.Equal(t, "/", b.Client(t).SignInWith("github"))
	a := b.Account(t, email)
	require.Equal(t, handlerstest.AccountRow{ID: a.ID, Name: "Real Owner", HasPassword: false, Verified: true}, a)
	resp := b.Client(t).Post("/login", "/login", url.Values{"email": {email}, "password": {"squatter password"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	var replaced bool
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		"SELECT (details->>'replaced_unverified')::boolean FROM audit_events WHERE actor_id = $1 AND action = 'user.signup' AND details ? 'provider'", a.ID).Scan(&replaced))
	require.True(t, replaced)
}

// TestOAuthUnverifiedEmailRefused: no account is made or linked from an
// email the provider has not verified.
func TestOAuthUnverifiedEmailRefused(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupOAuth(t)
	b.GitHub.SignIn(handlerstest.Person{ID: "5", Login: "unverified", Email: handlerstest.UniqueEmail("unverified-gh"), Verified: false})
	b.Google.SignIn(handlerstest.Person{ID: "g-5", Name: "Unverified", Email: handlerstest.UniqueEmail("unverified-g"), Verified: false})
	for _, provider := range []string{"github", "google"} {
		c := b.Client(t)
		require.Equal(t, "/login", c.SignInWith(provider), provider)
		_, body := c.Get("/login")
		require.Contains(t, body, "That account has no verified email address.", provider)
	}
	require.Zero(t, b.Count(t, "users"))
	require.Zero(t, b.Count(t, "oauth_identities"))
	require.Zero(t, b.Count(t, "audit_events"))
}

// TestOAuthRefusedCallbacks: a callback whose state this browser did not
// start with, or that carries the provider's refusal, writes nothing and
// never reaches the provider's token endpoint.
func TestOAuthRefusedCallbacks(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupOAuth(t)
	b.GitHub.SignIn(handlerstest.Person{ID: "6", Login: "victim", Email: handlerstest.UniqueEmail("victim"), Verified: true})
	callback := b.Server.URL + "/auth/github/callback?"
	stateFlash := "That sign-in did not start in this browser"

	c := b.Client(t)
	state := c.Start("github").Query().Get("state")
	require.NotEmpty(t, state)
	resp, _ := c.FetchURL(callback + url.Values{"code": {"forged"}, "state": {state + "x"}}.Encode())
	require.Equal(t, "/login", resp.Header.Get("Location"))
	_, body := c.Get("/login")
	require.Contains(t, body, stateFlash)
	// The flow is used up: its own state no longer works either.
	resp, _ = c.FetchURL(callback + url.Values{"code": {"forged"}, "state": {state}}.Encode())
	require.Equal(t, "/login", resp.Header.Get("Location"))

	// A browser that never started gets nowhere with another's state.
	c2 := b.Client(t)
	state = c.Start("github").Query().Get("state")
	resp, _ = c2.FetchURL(callback + url.Values{"code": {"forged"}, "state": {state}}.Encode())
	require.Equal(t, "/login", resp.Header.Get("Location"))
	_, body = c2.Get("/login")
	require.Contains(t, body, stateFlash)

	// Started here but another provider's callback.
	c3 := b.Client(t)
	state = c3.Start("google").Query().Get("state")
	resp, _ = c3.FetchURL(callback + url.Values{"code": {"forged"}, "state": {state}}.Encode())
	require.Equal(t, "/login", resp.Header.Get("Location"))

	// The person said no at the provider.
	c4 := b.Client(t)
	state = c4.Start("github").Query().Get("state")
	resp, _ = c4.FetchURL(callback + url.Values{"error": {"access_denied"}, "state": {state}}.Encode())
	require.Equal(t, "/login", resp.Header.Get("Location"))
	_, body = c4.Get("/login")
	require.Contains(t, body, "Sign-in was cancelled or refused at the provider.")

	require.Zero(t, b.GitHub.TokenRequests())
	require.Zero(t, b.Google.TokenRequests())
	require.Zero(t, b.Count(t, "users"))
	require.Zero(t, b.Count(t, "audit_events"))
}

// TestOAuthUnconfiguredProviders: only configured providers have buttons
// and routes.
func TestOAuthUnconfiguredProviders(t *testing.T) {
	t.Parallel()
	none := handlerstest.Setup(t).Client(t)
	_, body := none.Get("/login")
	require.NotContains(t, body, `data-testid="oauth-`)
	for _, path := range []string{"/auth/github", "/auth/github/callback?code=x&state=y", "/auth/google"} {
		code, _ := none.Get(path)
		require.Equal(t, http.StatusNotFound, code, path)
	}

	c := handlerstest.SetupOAuth(t).Client(t)
	_, body = c.Get("/login")
	require.Contains(t, body, `data-testid="oauth-github">Sign in with GitHub<`)
	require.Contains(t, body, `data-testid="oauth-google">Sign in with Google<`)
	code, _ := c.Get("/auth/gitlab")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = c.Get("/auth/link")
	require.Equal(t, http.StatusSeeOther, code, "no pending link: back to sign-in")
}

// TestOAuthReturnsToNext: a sign-in with a provider started from a page
// that asked for one lands back on it, also after linking; a next that is
// not a local path lands on the dashboard.
func TestOAuthReturnsToNext(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupOAuth(t)
	b.GitHub.SignIn(handlerstest.Person{ID: "9001", Login: "returner", Name: "Returner", Email: handlerstest.UniqueEmail("returner"), Verified: true})

	c := b.Client(t)
	resp, _ := c.FetchURL(c.Base + "/clusters")
	require.Equal(t, "/login?next=%2Fclusters", resp.Header.Get("Location"))
	_, body := c.Get("/login?next=%2Fclusters")
	require.Contains(t, body, `href="/auth/github?next=%2Fclusters"`)
	require.Equal(t, "/clusters", c.SignInFrom("/auth/github?next=%2Fclusters", "github"))

	require.Equal(t, "/", b.Client(t).SignInFrom("/auth/github?next=%2F%2Fevil.example%2F", "github"))

	// Through the link page too.
	_, email := b.SignedUpUser(t, "returning-linker")
	b.GitHub.SignIn(handlerstest.Person{ID: "9002", Login: "rl", Name: "RL", Email: email, Verified: true})
	c = b.Client(t)
	require.Equal(t, "/auth/link", c.SignInFrom("/auth/github?next=%2Fsettings%2Fprofile", "github"))
	resp = c.Post("/auth/link", "/auth/link", url.Values{"password": {"password of returning-linker"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, "/settings/profile", resp.Header.Get("Location"))
}

// TestSignInMethods: a signed-in user links a GitHub account with another
// email from the settings, sees and unlinks it; nobody else can unlink it
// or link it to theirs; the only way left to sign in cannot be unlinked.
func TestSignInMethods(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupOAuth(t)
	c, email := b.SignedUpUser(t, "methods")
	a := b.Account(t, email)
	b.GitHub.SignIn(handlerstest.Person{ID: "5150", Login: "methods-gh", Name: "M", Email: handlerstest.UniqueEmail("elsewhere"), Verified: true})

	code, body := c.Get("/settings/sign-in")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="identities-empty"`)
	require.Contains(t, body, `href="/auth/github?link=1"`)
	require.Equal(t, "/settings/sign-in", c.SignInFrom("/auth/github?link=1", "github"))
	require.Len(t, b.Identities(t, a.ID), 1, "linked to the signed-in account, whatever email GitHub gives")
	require.Equal(t, 1, b.Count(t, "users"), "no account was made")
	_, body = c.Get("/settings/sign-in")
	require.Contains(t, body, `data-testid="identity" data-provider="github"`)
	require.NotContains(t, body, `href="/auth/github?link=1"`)
	var identityID int64
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT id FROM oauth_identities WHERE user_id = $1", a.ID).Scan(&identityID))
	unlink := fmt.Sprintf("/settings/sign-in/%d/unlink", identityID)

	// Someone else can neither unlink it nor take it.
	other, _ := b.SignedUpUser(t, "other-methods")
	resp := other.Post("/settings/sign-in", unlink, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, "/settings/sign-in", other.SignInFrom("/auth/github?link=1", "github"))
	_, body = other.Get("/settings/sign-in")
	require.Contains(t, body, "already signs in to another KubeBYON account")
	require.Len(t, b.Identities(t, a.ID), 1)

	resp = c.Post("/settings/sign-in", unlink, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Empty(t, b.Identities(t, a.ID))
	require.Contains(t, b.AuditTrail(t, a.ID), "user.unlink_identity:github")

	// An account made with Google has no password: its only identity stays.
	b.Google.SignIn(handlerstest.Person{ID: "424242", Name: "Only Google", Email: handlerstest.UniqueEmail("only-google"), Verified: true})
	g := b.Client(t)
	require.Equal(t, "/", g.SignInWith("google"))
	var googleUser, googleID int64
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT user_id, id FROM oauth_identities WHERE provider = 'google'").Scan(&googleUser, &googleID))
	resp = g.Post("/settings/sign-in", fmt.Sprintf("/settings/sign-in/%d/unlink", googleID), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = g.Get("/settings/sign-in")
	require.Contains(t, body, "This is your only way to sign in.")
	require.Len(t, b.Identities(t, googleUser), 1)
}
