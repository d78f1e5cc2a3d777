package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/adminsignup"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/signinproviders"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

type apiInvitationJSON struct {
	ID        int64      `json:"id"`
	Email     string     `json:"email"`
	State     string     `json:"state"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	InvitedBy string     `json:"invited_by"`
}

// TestAPIAdminSignUpAndInvitations: the sign-up policy changes with an
// admin key as in the back office; invitations are made (and mailed),
// listed a page at a time, read, resent and revoked.
func TestAPIAdminSignUpAndInvitations(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	a := newAdminAPI(t, b, "doorkeeper")

	type signUp struct {
		Policy         string   `json:"policy"`
		AllowedDomains []string `json:"allowed_domains"`
	}
	require.Equal(t, signUp{Policy: "open", AllowedDomains: []string{}}, get[signUp](t, a, "/settings/sign-up"))
	st := patchAs[signUp](t, a, "/settings/sign-up", `{"policy": "invite_only", "allowed_domains": ["Example.ORG", "@example.com", "example.org"]}`)
	require.Equal(t, signUp{Policy: "invite_only", AllowedDomains: []string{"example.com", "example.org"}}, st)
	require.Equal(t, st, get[signUp](t, a, "/settings/sign-up"))
	_, page := b.Client(t).Get("/signup")
	require.NotContains(t, page, `name="password"`, "sign-up is by invitation only")
	a.requireInvalid(t, http.MethodPatch, "/settings/sign-up", `{"policy": "nobody"}`, "policy")
	a.requireInvalid(t, http.MethodPatch, "/settings/sign-up", `{"allowed_domains": ["localhost"]}`, "allowed_domains")
	require.Equal(t, st, get[signUp](t, a, "/settings/sign-up"))
	require.Equal(t, 1, a.audited(t, adminsignup.ActionUpdate))

	// Three invitations, mailed.
	var ids []int64
	for _, name := range []string{"grace", "alan", "ada"} {
		email := name + "@example.net"
		r := a.call(t, http.MethodPost, "/invitations", `{"email": " `+email+` "}`, http.StatusCreated)
		inv := handlerstest.DecodeAs[apiInvitationJSON](t, r)
		require.Equal(t, email, inv.Email)
		require.Equal(t, "pending", inv.State)
		require.Equal(t, a.email, inv.InvitedBy)
		require.Equal(t, fmt.Sprintf("/api/v1/admin/invitations/%d", inv.ID), r.Header.Get("Location"))
		require.Equal(t, 1, b.EmailJobs(t, email, notify.EmailInvitation))
		ids = append(ids, inv.ID)
	}
	a.requireInvalid(t, http.MethodPost, "/invitations", `{"email": "grace@example.net"}`, "email")
	a.requireInvalid(t, http.MethodPost, "/invitations", `{"email": "not an address"}`, "email")
	a.requireInvalid(t, http.MethodPost, "/invitations", `{"email": "`+a.email+`"}`, "email")

	// A page at a time, newest first.
	var seen []int64
	next := ""
	for range 3 {
		r := a.call(t, http.MethodGet, "/invitations?limit=1"+next, "", http.StatusOK)
		page := handlerstest.DecodeAs[struct {
			Invitations []apiInvitationJSON `json:"invitations"`
			Next        string              `json:"next"`
		}](t, r)
		require.Len(t, page.Invitations, 1)
		seen = append(seen, page.Invitations[0].ID)
		next = "&cursor=" + page.Next
		if len(seen) == 3 {
			require.Empty(t, page.Next, "the last page has no next")
		}
	}
	require.Equal(t, []int64{ids[2], ids[1], ids[0]}, seen)
	a.call(t, http.MethodGet, "/invitations?cursor=nope", "", http.StatusBadRequest)

	one := get[apiInvitationJSON](t, a, fmt.Sprintf("/invitations/%d", ids[0]))
	require.Equal(t, "grace@example.net", one.Email)
	a.call(t, http.MethodGet, fmt.Sprintf("/invitations/%d", ids[2]+100), "", http.StatusNotFound)

	// Resent: a new link, mailed again.
	resent := handlerstest.DecodeAs[apiInvitationJSON](t, a.call(t, http.MethodPost, fmt.Sprintf("/invitations/%d/resend", ids[0]), "", http.StatusOK))
	require.Equal(t, "pending", resent.State)
	require.False(t, resent.ExpiresAt.Before(one.ExpiresAt))
	require.Equal(t, 2, b.EmailJobs(t, "grace@example.net", notify.EmailInvitation))

	// Revoked: it stays, revoked; then nothing more can be done to it.
	revoked := handlerstest.DecodeAs[apiInvitationJSON](t, a.call(t, http.MethodDelete, fmt.Sprintf("/invitations/%d", ids[0]), "", http.StatusOK))
	require.Equal(t, "revoked", revoked.State)
	require.NotNil(t, revoked.RevokedAt)
	a.call(t, http.MethodDelete, fmt.Sprintf("/invitations/%d", ids[0]), "", http.StatusConflict)
	a.call(t, http.MethodPost, fmt.Sprintf("/invitations/%d/resend", ids[0]), "", http.StatusConflict)
	a.call(t, http.MethodDelete, fmt.Sprintf("/invitations/%d", ids[2]+100), "", http.StatusNotFound)
	a.call(t, http.MethodPost, "/invitations/nope/resend", "", http.StatusNotFound)
	_, page = a.admin.Get("/admin/settings/sign-up")
	require.Contains(t, page, "alan@example.net")
	for action, n := range map[string]int{adminsignup.ActionInvite: 3, adminsignup.ActionResend: 1, adminsignup.ActionRevoke: 1} {
		require.Equal(t, n, a.audited(t, action), action)
	}
}

type apiSignInProviderJSON struct {
	Source          string `json:"source"`
	ClientID        string `json:"client_id"`
	ClientSecretSet bool   `json:"client_secret_set"`
	Label           string `json:"label"`
	Issuer          string `json:"issuer"`
	Scopes          string `json:"scopes"`
	CallbackURL     string `json:"callback_url"`
}

type apiSignInJSON struct {
	GitHub apiSignInProviderJSON `json:"github"`
	Google apiSignInProviderJSON `json:"google"`
	OIDC   apiSignInProviderJSON `json:"oidc"`
}

// TestAPIAdminSignIn: the sign-in providers change with an admin key and
// no password; the client secret is never answered, kept when a change
// leaves it out; the discovery test reads the issuer given or stored.
func TestAPIAdminSignIn(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	a := newAdminAPI(t, b, "sso")
	idp := testenv.NewOIDCProvider(t, b.Server.URL+"/auth/oidc/callback")
	secret := idp.ClientSecret

	st := get[apiSignInJSON](t, a, "/settings/sign-in")
	require.Equal(t, "off", st.OIDC.Source)
	require.Equal(t, b.Server.URL+"/auth/oidc/callback", st.OIDC.CallbackURL)
	require.False(t, st.OIDC.ClientSecretSet)

	a.requireInvalid(t, http.MethodPatch, "/settings/sign-in", `{"oidc": {"issuer": "ftp://sso.example.com", "scopes": "email profile",
		"client_id": "`+idp.ClientID+`", "client_secret": "`+secret+`"}}`, "oidc.issuer", "oidc.scopes")
	a.requireInvalid(t, http.MethodPatch, "/settings/sign-in", `{"github": {"client_id": "gh-client"}}`, "github.client_secret")
	require.Empty(t, b.AuditDetails(t, signinproviders.ActionUpdate))

	st = patchAs[apiSignInJSON](t, a, "/settings/sign-in", `{"oidc": {"label": "Company SSO", "issuer": "`+idp.Issuer+`",
		"client_id": "`+idp.ClientID+`", "client_secret": "`+secret+`", "scopes": " openid   email "}}`, secret)
	require.Equal(t, apiSignInProviderJSON{
		Source: "settings", ClientID: idp.ClientID, ClientSecretSet: true, Label: "Company SSO", Issuer: idp.Issuer,
		Scopes: "openid email", CallbackURL: b.Server.URL + "/auth/oidc/callback",
	}, st.OIDC)
	require.Equal(t, "off", st.GitHub.Source, "the others stay as they are")
	require.Equal(t, st, get[apiSignInJSON](t, a, "/settings/sign-in", secret))
	_, page := b.Client(t).Get("/login")
	require.Contains(t, page, `data-testid="oauth-oidc">Sign in with Company SSO<`)
	details := b.AuditDetails(t, signinproviders.ActionUpdate)
	require.Len(t, details, 1)
	require.JSONEq(t, `{"changed": ["oidc-clientId", "oidc-clientSecret", "oidc-issuer", "oidc-label", "oidc-scopes"], "oidc-clientSecret": "replaced"}`, details[0])
	require.Equal(t, 1, a.audited(t, signinproviders.ActionUpdate))

	// Left out, the secret is kept.
	st = patchAs[apiSignInJSON](t, a, "/settings/sign-in", `{"oidc": {"label": "Acme SSO"}}`, secret)
	require.Equal(t, "Acme SSO", st.OIDC.Label)
	require.True(t, st.OIDC.ClientSecretSet)
	l, err := (&signinproviders.Service{Pool: b.Pool, Box: b.Box}).Load(context.Background())
	require.NoError(t, err)
	require.Equal(t, secret, l.Settings[signinproviders.OIDC].ClientSecret)

	// The discovery test: the stored issuer, another, a wrong one.
	type discovery struct {
		Issuer                string `json:"issuer"`
		OK                    bool   `json:"ok"`
		AuthorizationEndpoint string `json:"authorization_endpoint"`
		Error                 string `json:"error"`
	}
	d := handlerstest.DecodeAs[discovery](t, a.call(t, http.MethodPost, "/settings/sign-in/test", "", http.StatusOK))
	require.Equal(t, discovery{Issuer: idp.Issuer, OK: true, AuthorizationEndpoint: idp.Issuer + "/authorize"}, d)
	d = handlerstest.DecodeAs[discovery](t, a.call(t, http.MethodPost, "/settings/sign-in/test", `{"issuer": "`+idp.Issuer+`/nowhere"}`, http.StatusOK))
	require.False(t, d.OK)
	require.Contains(t, d.Error, "/nowhere/.well-known/openid-configuration")
	a.requireInvalid(t, http.MethodPost, "/settings/sign-in/test", `{"issuer": "sso.example.com"}`, "issuer")

	// An empty client ID switches the provider off, its secret removed.
	st = patchAs[apiSignInJSON](t, a, "/settings/sign-in", `{"oidc": {"client_id": "", "label": "", "issuer": "", "scopes": ""}}`)
	require.Equal(t, apiSignInProviderJSON{Source: "off", CallbackURL: b.Server.URL + "/auth/oidc/callback"}, st.OIDC)
	_, page = b.Client(t).Get("/login")
	require.NotContains(t, page, `data-testid="oauth-oidc"`)
}
