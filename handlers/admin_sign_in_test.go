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
	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// oidcForm is the sign-in providers form naming p as the OpenID Connect
// provider.
func oidcForm(p *testenv.OIDCProvider, password string) url.Values {
	return url.Values{
		"oidc-label": {"Company SSO"}, "oidc-issuer": {p.Issuer}, "oidc-clientId": {p.ClientID},
		"oidc-clientSecret": {p.ClientSecret}, "password": {password},
	}
}

// TestAdminSignInOIDC: an admin sets up the company's OpenID Connect
// provider in the admin area; at once a new person signs up with it, an
// existing account links it, and an unverified email is refused.
func TestAdminSignInOIDC(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "sso-admin")
	idp := testenv.NewOIDCProvider(t, b.Server.URL+"/auth/oidc/callback")
	const page = "/admin/settings/sign-in"

	code, body := admin.Get(page)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-settings-nav"`)
	require.Contains(t, body, `data-testid="sign-in-oidc" data-source="off"`)
	require.Contains(t, body, `value="`+b.Server.URL+`/auth/oidc/callback" readonly`)
	_, body = b.Client(t).Get("/login")
	require.NotContains(t, body, `data-testid="oauth-oidc"`)

	// Bad input: 422 at the fields, what was typed kept, nothing written.
	form := oidcForm(idp, "password of sso-admin")
	form.Set("oidc-issuer", "ftp://sso.example.com")
	form.Set("oidc-scopes", "email profile")
	resp := admin.Post(page, page, form)
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-oidc-issuer">The issuer URL must be an http or https URL`)
	require.Contains(t, body, `data-testid="error-oidc-scopes">Scopes are separated by spaces and must include openid.<`)
	require.Contains(t, body, `value="ftp://sso.example.com"`)
	require.Contains(t, body, `value="`+idp.ClientID+`"`)
	require.NotContains(t, body, idp.ClientSecret)

	// The discovery test reads the issuer typed, saves nothing, and only
	// warns when the provider does not answer.
	resp = admin.Post(page, page+"/test", oidcForm(idp, ""))
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `data-testid="sign-in-test-ok">✓ `+idp.Issuer+` answered with its discovery document:`)
	require.Contains(t, body, "<code>"+idp.Issuer+"/authorize</code>")
	form = oidcForm(idp, "")
	form.Set("oidc-issuer", idp.Issuer+"/nowhere")
	resp = admin.Post(page, page+"/test", form)
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="sign-in-test-warning">Warning: the discovery document of `+idp.Issuer+`/nowhere could not be read`)
	form.Set("oidc-issuer", "sso.example.com")
	resp = admin.Post(page, page+"/test", form)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-oidc-issuer"`)
	_, body = admin.Get(page)
	require.Contains(t, body, `data-testid="sign-in-oidc" data-source="off"`)

	form = oidcForm(idp, "")
	resp = admin.Post(page, page, form)
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-password">Enter your password (or sign in again with your provider)`)
	form.Set("password", "not my password")
	resp = admin.Post(page, page, form)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Empty(t, b.AuditDetails(t, "admin.sign_in_provider_update"))

	form.Set("password", "password of sso-admin")
	resp = admin.Post(page, page, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = admin.Get(page)
	require.Contains(t, body, "Sign-in providers saved.")
	require.Contains(t, body, `data-testid="sign-in-oidc" data-source="settings"`)
	require.Contains(t, body, `data-testid="sign-in-secret-state-oidc">A client secret is stored`)
	require.NotContains(t, body, idp.ClientSecret)
	details := b.AuditDetails(t, "admin.sign_in_provider_update")
	require.Len(t, details, 1)
	require.JSONEq(t, `{"changed": ["oidc-clientId", "oidc-clientSecret", "oidc-issuer", "oidc-label"], "oidc-clientSecret": "replaced"}`, details[0])
	var stored string
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT value::text FROM settings WHERE key = 'sign_in_providers'").Scan(&stored))
	require.NotContains(t, stored, idp.ClientSecret, "the secret is sealed")

	// The same form again changes nothing and needs no password.
	form.Del("password")
	form.Del("oidc-clientSecret")
	resp = admin.Post(page, page, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Len(t, b.AuditDetails(t, "admin.sign_in_provider_update"), 1)

	// A new person signs up with it, no restart.
	email := handlerstest.UniqueEmail("sso-new")
	idp.SignIn(testenv.OIDCUser{Subject: "kc-1001", Email: email, EmailVerified: true, GivenName: "Ada", FamilyName: "Lovelace"})
	c := b.Client(t)
	_, body = c.Get("/login")
	require.Contains(t, body, `data-testid="oauth-oidc">Sign in with Company SSO<`)
	require.Equal(t, "/", c.SignInThrough("/auth/oidc", "oidc"))
	_, body = c.Get("/")
	require.Contains(t, body, `data-testid="dashboard-greeting">Welcome, Ada Lovelace<`)
	a := b.Account(t, email)
	require.True(t, a.Verified)
	require.Equal(t, []string{"oidc:kc-1001:" + email}, b.Identities(t, a.ID))
	require.Equal(t, []string{"user.signup:oidc", "user.sign_in:oidc"}, b.AuditTrail(t, a.ID))
	// The request carried a PKCE challenge (which the provider checked
	// against the verifier at the token exchange) and a nonce.
	logins := idp.Logins()
	require.Len(t, logins, 1)
	require.Equal(t, "S256", logins[0].CodeChallengeMethod)
	require.Len(t, logins[0].CodeChallenge, 43)
	require.NotEmpty(t, logins[0].Nonce)

	// An existing account links it from its settings.
	existing, existingEmail := b.SignedUpUser(t, "sso-linker")
	idp.SignIn(testenv.OIDCUser{Subject: "kc-2002", Email: handlerstest.UniqueEmail("sso-elsewhere"), EmailVerified: true, GivenName: "L"})
	_, body = existing.Get("/settings/sign-in")
	require.Contains(t, body, `href="/auth/oidc?link=1"`)
	require.Equal(t, "/settings/sign-in", existing.SignInThrough("/auth/oidc?link=1", "oidc"))
	linker := b.Account(t, existingEmail)
	require.Len(t, b.Identities(t, linker.ID), 1)
	require.True(t, strings.HasPrefix(b.Identities(t, linker.ID)[0], "oidc:kc-2002:"))
	_, body = existing.Get("/settings/sign-in")
	require.Contains(t, body, `data-testid="identity" data-provider="oidc"`)

	// An address the provider did not verify makes no account.
	idp.SignIn(testenv.OIDCUser{Subject: "kc-3003", Email: handlerstest.UniqueEmail("sso-unverified"), EmailVerified: false})
	users := b.Count(t, "users")
	u := b.Client(t)
	require.Equal(t, "/login", u.SignInThrough("/auth/oidc", "oidc"))
	_, body = u.Get("/login")
	require.Contains(t, body, "That account has no verified email address.")
	require.Equal(t, users, b.Count(t, "users"))

	// An ID token with another sign-in's nonce signs nobody in.
	idp.SignIn(testenv.OIDCUser{Subject: "kc-4004", Email: handlerstest.UniqueEmail("sso-replayed"), EmailVerified: true})
	idp.ForgeNonce(true)
	u = b.Client(t)
	require.Equal(t, "/login", u.SignInThrough("/auth/oidc", "oidc"))
	_, body = u.Get("/login")
	require.Contains(t, body, "We could not finish signing you in with the provider.")
	require.Equal(t, users, b.Count(t, "users"))
	idp.ForgeNonce(false)
	logins = idp.Logins()
	require.NotEqual(t, logins[len(logins)-1].Nonce, logins[len(logins)-2].Nonce, "a nonce per sign-in")

	// Emptied, the provider is off again.
	resp = admin.Post(page, page, url.Values{"oidc-clientSecretClear": {"on"}, "password": {"password of sso-admin"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = b.Client(t).Get("/login")
	require.NotContains(t, body, `data-testid="oauth-oidc"`)
	code, _ = b.Client(t).Get("/auth/oidc")
	require.Equal(t, http.StatusNotFound, code)
	details = b.AuditDetails(t, "admin.sign_in_provider_update")
	require.Len(t, details, 2)
	require.JSONEq(t, `{"changed": ["oidc-clientId", "oidc-clientSecret", "oidc-issuer", "oidc-label"], "oidc-clientSecret": "cleared"}`, details[1])
}

// TestAdminSignInSources: providers from the environment are shown as such;
// the settings win over them, provider by provider, and clearing the
// settings goes back to them.
func TestAdminSignInSources(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupOAuth(t)
	admin, _ := b.SignedUpAdmin(t, "sources-admin")
	const page = "/admin/settings/sign-in"
	_, body := admin.Get(page)
	require.Contains(t, body, `data-testid="sign-in-github" data-source="env"`)
	require.Contains(t, body, `data-testid="sign-in-google" data-source="env"`)
	require.Contains(t, body, `data-testid="sign-in-oidc" data-source="off"`)

	resp := admin.Post(page, page, url.Values{
		"github-clientId": {"ui-client-id"}, "github-clientSecret": {"ui-secret"}, "password": {"password of sources-admin"},
	})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = admin.Get(page)
	require.Contains(t, body, `data-testid="sign-in-github" data-source="settings"`)
	require.Contains(t, body, "which win over the environment variables")
	require.Contains(t, body, `data-testid="sign-in-google" data-source="env"`)
	// Sign-in with GitHub now goes to github.com with the settings' client.
	to := b.Client(t).Start("github")
	require.Equal(t, "github.com", to.Host)
	require.Equal(t, "ui-client-id", to.Query().Get("client_id"))
	require.Equal(t, b.Server.URL+"/auth/github/callback", to.Query().Get("redirect_uri"))
	require.Equal(t, handlerstest.FakeClientID, b.Client(t).Start("google").Query().Get("client_id"))

	resp = admin.Post(page, page, url.Values{"github-clientSecretClear": {"on"}, "password": {"password of sources-admin"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = admin.Get(page)
	require.Contains(t, body, `data-testid="sign-in-github" data-source="env"`)
	require.Equal(t, handlerstest.FakeClientID, b.Client(t).Start("github").Query().Get("client_id"))
}

// TestAdminReauthWithProvider: an admin who signs in only with a provider
// confirms by signing in with it again; the confirmation counts for that
// admin, in that browser, with a provider account linked to theirs.
func TestAdminReauthWithProvider(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	setter, _ := b.SignedUpAdmin(t, "reauth-setter")
	_, plainEmail := b.SignedUpUser(t, "reauth-plain")
	idp := testenv.NewOIDCProvider(t, b.Server.URL+"/auth/oidc/callback")
	const page = "/admin/settings/sign-in"
	resp := setter.Post(page, page, oidcForm(idp, "password of reauth-setter"))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))

	email := handlerstest.UniqueEmail("sso-admin")
	idp.SignIn(testenv.OIDCUser{Subject: "admin-1", Email: email, EmailVerified: true, GivenName: "Only", FamilyName: "SSO"})
	admin := b.Client(t)
	require.Equal(t, "/", admin.SignInThrough("/auth/oidc", "oidc"))
	_, err := b.Pool.Exec(context.Background(), "UPDATE users SET role = 'admin' WHERE lower(email) = lower($1)", email)
	require.NoError(t, err)

	// No password to give: the page offers the provider instead.
	_, body := admin.Get(page)
	require.Contains(t, body, `data-testid="admin-reauth"`)
	require.Contains(t, body, `href="/auth/oidc?reauth=1&amp;next=%2Fadmin%2Fsettings%2Fsign-in"`)
	require.NotContains(t, body, `id="password"`)
	change := url.Values{"oidc-label": {"Renamed SSO"}, "oidc-issuer": {idp.Issuer}, "oidc-clientId": {idp.ClientID}}
	resp = admin.Post(page, page, change)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-password"`)

	// Another provider account cannot confirm for this admin.
	idp.SignIn(testenv.OIDCUser{Subject: "someone-else", Email: handlerstest.UniqueEmail("else"), EmailVerified: true})
	require.Equal(t, page, admin.SignInThrough("/auth/oidc?reauth=1&next=%2Fadmin%2Fsettings%2Fsign-in", "oidc"))
	_, body = admin.Get(page)
	require.Contains(t, body, "That provider account is not linked to yours")
	resp = admin.Post(page, page, change)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, 1, b.Count(t, "oauth_identities"), "nothing was linked")

	// Their own: confirmed, and the provider was asked for a new login.
	idp.SignIn(testenv.OIDCUser{Subject: "admin-1", Email: email, EmailVerified: true, GivenName: "Only", FamilyName: "SSO"})
	require.Equal(t, page, admin.SignInThrough("/auth/oidc?reauth=1&next=%2Fadmin%2Fsettings%2Fsign-in", "oidc"))
	logins := idp.Logins()
	require.Equal(t, []string{"login"}, logins[len(logins)-1].Prompt)
	_, body = admin.Get(page)
	require.Contains(t, body, "Confirmed. You can make your change now.")
	require.Contains(t, body, `data-testid="admin-reauth-fresh"`)
	resp = admin.Post(page, page, change)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = b.Client(t).Get("/login")
	require.Contains(t, body, "Sign in with Renamed SSO")

	// The existing confirmations take it too: the mail settings and the
	// platform settings offer it and accept it.
	_, body = admin.Get("/admin/mail")
	require.Contains(t, body, `data-testid="admin-reauth-fresh"`)
	require.Contains(t, body, `href="/auth/oidc?reauth=1&amp;next=%2Fadmin%2Fmail"`)
	_, body = admin.Get("/admin/settings")
	require.Contains(t, body, `href="/auth/oidc?reauth=1&amp;next=%2Fadmin%2Fsettings"`)
	_, body = admin.Get("/admin/edge")
	require.Contains(t, body, `href="/auth/oidc?reauth=1&amp;next=%2Fadmin%2Fedge"`)
	resp = admin.Post("/admin/mail", "/admin/mail", url.Values{"host": {"smtp.example.com"}, "port": {"587"}, "tls": {"starttls"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	// And the actions on accounts.
	userPage := fmt.Sprintf("/admin/users/%d", b.UserID(t, plainEmail))
	_, body = admin.Get(userPage)
	require.Contains(t, body, `href="/auth/oidc?reauth=1&amp;next=`+url.QueryEscape(userPage)+`"`)
	require.NotContains(t, body, `id="confirm-disable"`)
	resp = admin.Post(userPage, userPage+"/disable", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, adminusers.StatusDisabled, b.AccountStatus(t, plainEmail))

	// It is this browser's: another session of the same admin has none.
	other := b.Client(t)
	require.Equal(t, "/", other.SignInThrough("/auth/oidc", "oidc"))
	resp = other.Post(page, page, url.Values{"oidc-issuer": {idp.Issuer}, "oidc-clientId": {idp.ClientID}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
}
