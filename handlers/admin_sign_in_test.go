package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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

// signInThrough goes through a provider as a browser does, following the
// provider's own redirects (its login page, its callback) until it sends
// the browser back to the platform's callback, and returns where that
// callback sends the browser.
func (c *client) signInThrough(path, provider string) string {
	c.t.Helper()
	next := c.startAt(path)
	for range 10 {
		if strings.HasPrefix(next.String(), c.base+"/auth/"+provider+"/callback?") {
			resp, body := c.fetchURL(next.String())
			require.Equal(c.t, http.StatusSeeOther, resp.StatusCode, body)
			return resp.Header.Get("Location")
		}
		resp, body := c.fetchURL(next.String())
		require.Contains(c.t, []int{http.StatusFound, http.StatusSeeOther}, resp.StatusCode, body)
		loc, err := next.Parse(resp.Header.Get("Location"))
		require.NoError(c.t, err)
		next = loc
	}
	c.t.Fatalf("no way back from %s", provider)
	return ""
}

// auditDetails are the details of the events with action, in order, as
// JSON text.
func (b *testBundle) auditDetails(t *testing.T, action string) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), "SELECT details::text FROM audit_events WHERE action = $1 ORDER BY id", action)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var d string
		require.NoError(t, rows.Scan(&d))
		out = append(out, d)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestAdminSignInOIDC: an admin sets up the company's OpenID Connect
// provider in the admin area; at once a new person signs up with it, an
// existing account links it, and an unverified email is refused.
func TestAdminSignInOIDC(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, _ := b.signedUpAdmin(t, "sso-admin")
	idp := testenv.NewOIDCProvider(t, b.server.URL+"/auth/oidc/callback")
	const page = "/admin/settings/sign-in"

	code, body := admin.get(page)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-settings-nav"`)
	require.Contains(t, body, `data-testid="sign-in-oidc" data-source="off"`)
	require.Contains(t, body, `value="`+b.server.URL+`/auth/oidc/callback" readonly`)
	_, body = b.client(t).get("/login")
	require.NotContains(t, body, `data-testid="oauth-oidc"`)

	// Bad input: 422 at the fields, what was typed kept, nothing written.
	form := oidcForm(idp, "password of sso-admin")
	form.Set("oidc-issuer", "ftp://sso.example.com")
	form.Set("oidc-scopes", "email profile")
	resp := admin.post(page, page, form)
	body = readBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-oidc-issuer">The issuer URL must be an http or https URL`)
	require.Contains(t, body, `data-testid="error-oidc-scopes">Scopes are separated by spaces and must include openid.<`)
	require.Contains(t, body, `value="ftp://sso.example.com"`)
	require.Contains(t, body, `value="`+idp.ClientID+`"`)
	require.NotContains(t, body, idp.ClientSecret)

	// The discovery test reads the issuer typed, saves nothing, and only
	// warns when the provider does not answer.
	resp = admin.post(page, page+"/test", oidcForm(idp, ""))
	body = readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `data-testid="sign-in-test-ok">✓ `+idp.Issuer+` answered with its discovery document:`)
	require.Contains(t, body, "<code>"+idp.Issuer+"/authorize</code>")
	form = oidcForm(idp, "")
	form.Set("oidc-issuer", idp.Issuer+"/nowhere")
	resp = admin.post(page, page+"/test", form)
	body = readBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="sign-in-test-warning">Warning: the discovery document of `+idp.Issuer+`/nowhere could not be read`)
	form.Set("oidc-issuer", "sso.example.com")
	resp = admin.post(page, page+"/test", form)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), `data-testid="error-oidc-issuer"`)
	_, body = admin.get(page)
	require.Contains(t, body, `data-testid="sign-in-oidc" data-source="off"`)

	form = oidcForm(idp, "")
	resp = admin.post(page, page, form)
	body = readBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-password">Enter your password (or sign in again with your provider)`)
	form.Set("password", "not my password")
	resp = admin.post(page, page, form)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Empty(t, b.auditDetails(t, "admin.sign_in_provider_update"))

	form.Set("password", "password of sso-admin")
	resp = admin.post(page, page, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	_, body = admin.get(page)
	require.Contains(t, body, "Sign-in providers saved.")
	require.Contains(t, body, `data-testid="sign-in-oidc" data-source="settings"`)
	require.Contains(t, body, `data-testid="sign-in-secret-state-oidc">A client secret is stored`)
	require.NotContains(t, body, idp.ClientSecret)
	details := b.auditDetails(t, "admin.sign_in_provider_update")
	require.Len(t, details, 1)
	require.JSONEq(t, `{"changed": ["oidc-clientId", "oidc-clientSecret", "oidc-issuer", "oidc-label"], "oidc-clientSecret": "replaced"}`, details[0])
	var stored string
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT value::text FROM settings WHERE key = 'sign_in_providers'").Scan(&stored))
	require.NotContains(t, stored, idp.ClientSecret, "the secret is sealed")

	// The same form again changes nothing and needs no password.
	form.Del("password")
	form.Del("oidc-clientSecret")
	resp = admin.post(page, page, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Len(t, b.auditDetails(t, "admin.sign_in_provider_update"), 1)

	// A new person signs up with it, no restart.
	email := uniqueEmail("sso-new")
	idp.SignIn(testenv.OIDCUser{Subject: "kc-1001", Email: email, EmailVerified: true, GivenName: "Ada", FamilyName: "Lovelace"})
	c := b.client(t)
	_, body = c.get("/login")
	require.Contains(t, body, `data-testid="oauth-oidc">Sign in with Company SSO<`)
	require.Equal(t, "/", c.signInThrough("/auth/oidc", "oidc"))
	_, body = c.get("/")
	require.Contains(t, body, `data-testid="dashboard-greeting">Welcome, Ada Lovelace<`)
	a := b.account(t, email)
	require.True(t, a.Verified)
	require.Equal(t, []string{"oidc:kc-1001:" + email}, b.identities(t, a.ID))
	require.Equal(t, []string{"user.signup:oidc", "user.sign_in:oidc"}, b.auditTrail(t, a.ID))
	// The request carried a PKCE challenge (which the provider checked
	// against the verifier at the token exchange) and a nonce.
	logins := idp.Logins()
	require.Len(t, logins, 1)
	require.Equal(t, "S256", logins[0].CodeChallengeMethod)
	require.Len(t, logins[0].CodeChallenge, 43)
	require.NotEmpty(t, logins[0].Nonce)

	// An existing account links it from its settings.
	existing, existingEmail := b.signedUpUser(t, "sso-linker")
	idp.SignIn(testenv.OIDCUser{Subject: "kc-2002", Email: uniqueEmail("sso-elsewhere"), EmailVerified: true, GivenName: "L"})
	_, body = existing.get("/settings/sign-in")
	require.Contains(t, body, `href="/auth/oidc?link=1"`)
	require.Equal(t, "/settings/sign-in", existing.signInThrough("/auth/oidc?link=1", "oidc"))
	linker := b.account(t, existingEmail)
	require.Len(t, b.identities(t, linker.ID), 1)
	require.True(t, strings.HasPrefix(b.identities(t, linker.ID)[0], "oidc:kc-2002:"))
	_, body = existing.get("/settings/sign-in")
	require.Contains(t, body, `data-testid="identity" data-provider="oidc"`)

	// An address the provider did not verify makes no account.
	idp.SignIn(testenv.OIDCUser{Subject: "kc-3003", Email: uniqueEmail("sso-unverified"), EmailVerified: false})
	users := b.count(t, "users")
	u := b.client(t)
	require.Equal(t, "/login", u.signInThrough("/auth/oidc", "oidc"))
	_, body = u.get("/login")
	require.Contains(t, body, "That account has no verified email address.")
	require.Equal(t, users, b.count(t, "users"))

	// An ID token with another sign-in's nonce signs nobody in.
	idp.SignIn(testenv.OIDCUser{Subject: "kc-4004", Email: uniqueEmail("sso-replayed"), EmailVerified: true})
	idp.ForgeNonce(true)
	u = b.client(t)
	require.Equal(t, "/login", u.signInThrough("/auth/oidc", "oidc"))
	_, body = u.get("/login")
	require.Contains(t, body, "We could not finish signing you in with the provider.")
	require.Equal(t, users, b.count(t, "users"))
	idp.ForgeNonce(false)
	logins = idp.Logins()
	require.NotEqual(t, logins[len(logins)-1].Nonce, logins[len(logins)-2].Nonce, "a nonce per sign-in")

	// Emptied, the provider is off again.
	resp = admin.post(page, page, url.Values{"oidc-clientSecretClear": {"on"}, "password": {"password of sso-admin"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	_, body = b.client(t).get("/login")
	require.NotContains(t, body, `data-testid="oauth-oidc"`)
	code, _ = b.client(t).get("/auth/oidc")
	require.Equal(t, http.StatusNotFound, code)
	details = b.auditDetails(t, "admin.sign_in_provider_update")
	require.Len(t, details, 2)
	require.JSONEq(t, `{"changed": ["oidc-clientId", "oidc-clientSecret", "oidc-issuer", "oidc-label"], "oidc-clientSecret": "cleared"}`, details[1])
}

// TestAdminSignInSources: providers from the environment are shown as such;
// the settings win over them, provider by provider, and clearing the
// settings goes back to them.
func TestAdminSignInSources(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	admin, _ := b.signedUpAdmin(t, "sources-admin")
	const page = "/admin/settings/sign-in"
	_, body := admin.get(page)
	require.Contains(t, body, `data-testid="sign-in-github" data-source="env"`)
	require.Contains(t, body, `data-testid="sign-in-google" data-source="env"`)
	require.Contains(t, body, `data-testid="sign-in-oidc" data-source="off"`)

	resp := admin.post(page, page, url.Values{
		"github-clientId": {"ui-client-id"}, "github-clientSecret": {"ui-secret"}, "password": {"password of sources-admin"},
	})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	_, body = admin.get(page)
	require.Contains(t, body, `data-testid="sign-in-github" data-source="settings"`)
	require.Contains(t, body, "which win over the environment variables")
	require.Contains(t, body, `data-testid="sign-in-google" data-source="env"`)
	// Sign-in with GitHub now goes to github.com with the settings' client.
	to := b.client(t).start("github")
	require.Equal(t, "github.com", to.Host)
	require.Equal(t, "ui-client-id", to.Query().Get("client_id"))
	require.Equal(t, b.server.URL+"/auth/github/callback", to.Query().Get("redirect_uri"))
	require.Equal(t, fakeClientID, b.client(t).start("google").Query().Get("client_id"))

	resp = admin.post(page, page, url.Values{"github-clientSecretClear": {"on"}, "password": {"password of sources-admin"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	_, body = admin.get(page)
	require.Contains(t, body, `data-testid="sign-in-github" data-source="env"`)
	require.Equal(t, fakeClientID, b.client(t).start("github").Query().Get("client_id"))
}

// TestAdminReauthWithProvider: an admin who signs in only with a provider
// confirms by signing in with it again; the confirmation counts for that
// admin, in that browser, with a provider account linked to theirs.
func TestAdminReauthWithProvider(t *testing.T) {
	t.Parallel()
	b := setup(t)
	setter, _ := b.signedUpAdmin(t, "reauth-setter")
	_, plainEmail := b.signedUpUser(t, "reauth-plain")
	idp := testenv.NewOIDCProvider(t, b.server.URL+"/auth/oidc/callback")
	const page = "/admin/settings/sign-in"
	resp := setter.post(page, page, oidcForm(idp, "password of reauth-setter"))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))

	email := uniqueEmail("sso-admin")
	idp.SignIn(testenv.OIDCUser{Subject: "admin-1", Email: email, EmailVerified: true, GivenName: "Only", FamilyName: "SSO"})
	admin := b.client(t)
	require.Equal(t, "/", admin.signInThrough("/auth/oidc", "oidc"))
	_, err := b.pool.Exec(context.Background(), "UPDATE users SET role = 'admin' WHERE lower(email) = lower($1)", email)
	require.NoError(t, err)

	// No password to give: the page offers the provider instead.
	_, body := admin.get(page)
	require.Contains(t, body, `data-testid="admin-reauth"`)
	require.Contains(t, body, `href="/auth/oidc?reauth=1&amp;next=%2Fadmin%2Fsettings%2Fsign-in"`)
	require.NotContains(t, body, `id="password"`)
	change := url.Values{"oidc-label": {"Renamed SSO"}, "oidc-issuer": {idp.Issuer}, "oidc-clientId": {idp.ClientID}}
	resp = admin.post(page, page, change)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), `data-testid="error-password"`)

	// Another provider account cannot confirm for this admin.
	idp.SignIn(testenv.OIDCUser{Subject: "someone-else", Email: uniqueEmail("else"), EmailVerified: true})
	require.Equal(t, page, admin.signInThrough("/auth/oidc?reauth=1&next=%2Fadmin%2Fsettings%2Fsign-in", "oidc"))
	_, body = admin.get(page)
	require.Contains(t, body, "That provider account is not linked to yours")
	resp = admin.post(page, page, change)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, 1, b.count(t, "oauth_identities"), "nothing was linked")

	// Their own: confirmed, and the provider was asked for a new login.
	idp.SignIn(testenv.OIDCUser{Subject: "admin-1", Email: email, EmailVerified: true, GivenName: "Only", FamilyName: "SSO"})
	require.Equal(t, page, admin.signInThrough("/auth/oidc?reauth=1&next=%2Fadmin%2Fsettings%2Fsign-in", "oidc"))
	logins := idp.Logins()
	require.Equal(t, []string{"login"}, logins[len(logins)-1].Prompt)
	_, body = admin.get(page)
	require.Contains(t, body, "Confirmed. You can make your change now.")
	require.Contains(t, body, `data-testid="admin-reauth-fresh"`)
	resp = admin.post(page, page, change)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	_, body = b.client(t).get("/login")
	require.Contains(t, body, "Sign in with Renamed SSO")

	// The existing confirmations take it too: the mail settings and the
	// platform settings offer it and accept it.
	_, body = admin.get("/admin/mail")
	require.Contains(t, body, `data-testid="admin-reauth-fresh"`)
	require.Contains(t, body, `href="/auth/oidc?reauth=1&amp;next=%2Fadmin%2Fmail"`)
	_, body = admin.get("/admin/settings")
	require.Contains(t, body, `href="/auth/oidc?reauth=1&amp;next=%2Fadmin%2Fsettings"`)
	_, body = admin.get("/admin/edge")
	require.Contains(t, body, `href="/auth/oidc?reauth=1&amp;next=%2Fadmin%2Fedge"`)
	resp = admin.post("/admin/mail", "/admin/mail", url.Values{"host": {"smtp.example.com"}, "port": {"587"}, "tls": {"starttls"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	// And the actions on accounts.
	userPage := fmt.Sprintf("/admin/users/%d", b.userID(t, plainEmail))
	_, body = admin.get(userPage)
	require.Contains(t, body, `href="/auth/oidc?reauth=1&amp;next=`+url.QueryEscape(userPage)+`"`)
	require.NotContains(t, body, `id="confirm-disable"`)
	resp = admin.post(userPage, userPage+"/disable", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, adminusers.StatusDisabled, b.accountStatus(t, plainEmail))

	// It is this browser's: another session of the same admin has none.
	other := b.client(t)
	require.Equal(t, "/", other.signInThrough("/auth/oidc", "oidc"))
	resp = other.post(page, page, url.Values{"oidc-issuer": {idp.Issuer}, "oidc-clientId": {idp.ClientID}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
}

// accountStatus is the account's state as the admin pages show it.
func (b *testBundle) accountStatus(t *testing.T, email string) adminusers.Status {
	t.Helper()
	var verified, disabled bool
	require.NoError(t, b.pool.QueryRow(context.Background(),
		"SELECT email_verified_at IS NOT NULL, disabled_at IS NOT NULL FROM users WHERE lower(email) = lower($1)", email).Scan(&verified, &disabled))
	return adminusers.StatusFrom(verified, disabled)
}
