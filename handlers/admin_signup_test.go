package handlers_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// setSignUp saves the sign-up settings as the admin c.
func setSignUp(t *testing.T, c *handlerstest.Client, policy, domains string) {
	t.Helper()
	resp := c.Post("/admin/settings/sign-up", "/admin/settings/sign-up", url.Values{"policy": {policy}, "allowedDomains": {domains}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
}

// TestAdminSignUpHiddenFromOthers: visitors and users get 404 from every
// sign-up route and change nothing.
func TestAdminSignUpHiddenFromOthers(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	user, _ := b.SignedUpUser(t, "notadmin")
	visitor := b.Client(t)
	for _, who := range []struct {
		name     string
		c        *handlerstest.Client
		formPage string
	}{{"visitor", visitor, "/login"}, {"user", user, "/"}} {
		code, _ := who.c.Get("/admin/settings/sign-up")
		require.Equal(t, http.StatusNotFound, code, who.name)
		for _, path := range []string{
			"/admin/settings/sign-up", "/admin/settings/sign-up/invitations",
			"/admin/settings/sign-up/invitations/1/resend", "/admin/settings/sign-up/invitations/1/revoke",
		} {
			resp := who.c.Post(who.formPage, path, url.Values{"policy": {"closed"}, "email": {"pwned@example.com"}})
			require.Equal(t, http.StatusNotFound, resp.StatusCode, who.name+" "+path)
		}
	}
	require.Zero(t, b.Count(t, "invitations"))
	require.Zero(t, b.Count(t, "settings"))
	require.Empty(t, b.AuditEvents(t, "admin.signup_update"))
	// Sign-up is still open.
	handlerstest.SignUp(t, b.Client(t), handlerstest.UniqueEmail("stillopen"), "Still Open", "password of still open")
}

// TestAdminSignUpSettings: the page shows the stored policy; a change is
// audited with the fields it changed; bad input is refused at its field
// with what was typed kept.
func TestAdminSignUpSettings(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "policymaker")

	code, body := admin.Get("/admin/settings/sign-up")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-settings-nav"`)
	require.Regexp(t, `<a href="/admin/settings/sign-up"[^>]*aria-current="page"`, body)
	require.Regexp(t, `value="open"\s+checked`, body)
	require.Contains(t, body, `data-testid="invitations-empty"`)

	resp := admin.Post("/admin/settings/sign-up", "/admin/settings/sign-up", url.Values{"policy": {"invite_only"}, "allowedDomains": {"Example.com\n@corp.example.org"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = admin.Get("/admin/settings/sign-up")
	require.Contains(t, body, "Sign-up settings saved.")
	require.Regexp(t, `value="invite_only"\s+checked`, body)
	require.Contains(t, body, ">corp.example.org\nexample.com</textarea>")

	// The same again changes nothing and writes nothing.
	setSignUp(t, admin, "invite_only", "example.com corp.example.org")
	_, body = admin.Get("/admin/settings/sign-up")
	require.Contains(t, body, "Nothing changed.")

	resp = admin.Post("/admin/settings/sign-up", "/admin/settings/sign-up", url.Values{"policy": {"sometimes"}, "allowedDomains": {"example.com\nnot a domain!"}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-policy"`)
	require.Contains(t, body, `data-testid="error-allowedDomains">Each line must be a domain name`)
	require.Contains(t, html.UnescapeString(body), ">example.com\nnot a domain!</textarea>", "what was typed is kept")

	require.Equal(t, []map[string]any{{
		"changed": []any{"allowedDomains", "policy"}, "policy": "invite_only",
		"allowedDomains": []any{"corp.example.org", "example.com"},
	}}, b.AuditEvents(t, "admin.signup_update"))
}

// TestSignUpPolicies: closed and invite-only take the form away and refuse
// what is posted anyway; allowed domains refuse other addresses at the
// field; a code mailed before sign-up closed no longer makes an account;
// existing accounts sign in whatever the policy.
func TestSignUpPolicies(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "gatekeeper")
	_, memberEmail := b.SignedUpUser(t, "member")
	pending := handlerstest.UniqueEmail("pending")
	handlerstest.SignUp(t, b.Client(t), pending, "Pending", "password of pending")
	pendingCode := handlerstest.CodeFrom(t, b.WaitMessages(t, pending, 1)[0])

	for _, tt := range []struct{ policy, text string }{
		{"closed", "Sign-up is closed"},
		{"invite_only", "Sign-up is by invitation only"},
	} {
		setSignUp(t, admin, tt.policy, "")
		c := b.Client(t)
		code, body := c.Get("/signup")
		require.Equal(t, http.StatusOK, code, tt.policy)
		require.Contains(t, body, tt.text)
		require.NotContains(t, body, `data-testid="signup-form"`)
		email := handlerstest.UniqueEmail("refused")
		resp := c.Post("/login", "/signup", url.Values{"email": {email}, "name": {"Refused"}, "password": {"password of refused"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode, tt.policy)
		require.Contains(t, handlerstest.ReadBody(t, resp), tt.text)
		require.False(t, b.UserExists(t, email), tt.policy)

		// The code mailed while sign-up was open no longer verifies.
		resp = c.Post("/login", "/signup/verify", url.Values{"email": {pending}, "code": {pendingCode}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tt.policy)
		require.Contains(t, handlerstest.ReadBody(t, resp), tt.text)
		require.False(t, b.Account(t, pending).Verified)

		resp = b.Client(t).Post("/login", "/login", url.Values{"email": {memberEmail}, "password": {"password of member"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "existing accounts still sign in")
	}

	setSignUp(t, admin, "open", "example.com")
	c := b.Client(t)
	_, body := c.Get("/signup")
	require.Contains(t, body, `data-testid="signup-domains">Accounts can be made with addresses at: example.com.`)
	elsewhere := strings.Replace(handlerstest.UniqueEmail("elsewhere"), "@example.com", "@example.org", 1)
	resp := c.Post("/signup", "/signup", url.Values{"email": {elsewhere}, "name": {"Elsewhere"}, "password": {"password of elsewhere"}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-email">Accounts can only be made with an address at an allowed domain.`)
	require.Contains(t, body, `value="`+elsewhere+`"`, "what was typed is kept")
	require.Contains(t, body, `value="Elsewhere"`)
	require.False(t, b.UserExists(t, elsewhere))
	// A subdomain is another domain.
	resp = c.Post("/signup", "/signup", url.Values{"email": {"sub@eu.example.com"}, "name": {"Sub"}, "password": {"password of sub"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	// The listed domain, in any case, signs up.
	handlerstest.SignUp(t, c, "Listed@EXAMPLE.com", "Listed", "password of listed")
	require.True(t, b.UserExists(t, "listed@example.com"))
}

// TestInvitations: an admin invites an address, which gets the link by
// email; the link opens the form for that address even under invite-only,
// works once, and says clearly when it no longer works. Every action is
// audited.
func TestInvitations(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, adminEmail := b.SignedUpAdmin(t, "inviter")
	setSignUp(t, admin, "invite_only", "example.com")
	// Only example.com may sign up: an invitation admits another domain.
	invited := strings.Replace(handlerstest.UniqueEmail("invited"), "@example.com", "@elsewhere.example.org", 1)

	// Bad input is refused at the field, typed value kept.
	resp := admin.Post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {"not an address"}})
	body := handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-email"`)
	require.Contains(t, body, `value="not an address"`)
	resp = admin.Post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {adminEmail}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "This address has an account already.")

	resp = admin.Post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {invited}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = admin.Get("/admin/settings/sign-up")
	require.Contains(t, body, "Invitation sent.")
	require.Regexp(t, `data-testid="invitation-row" data-email="`+regexp.QuoteMeta(invited)+`" data-state="pending"`, body)
	resp = admin.Post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {strings.ToUpper(invited)}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "This address has a pending invitation")

	msg := b.WaitMessages(t, invited, 1)[0]
	require.Equal(t, "You are invited to KubeBYON", msg.Subject)
	require.Contains(t, msg.Text, adminEmail+" invited you")
	link := b.InvitationLink(t, invited, 1)
	require.True(t, strings.HasPrefix(link, b.Server.URL+"/signup?invite="), link)
	path := strings.TrimPrefix(link, b.Server.URL)

	// Resend: a new link; the old one stops working.
	id := b.InvitationID(t, invited)
	resp = admin.Post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations/"+id+"/resend", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	fresh := strings.TrimPrefix(b.InvitationLink(t, invited, 2), b.Server.URL)
	require.NotEqual(t, path, fresh)
	c := b.Client(t)
	code, body := c.Get(path)
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, "This invitation link is not valid.")

	code, body = c.Get(fresh)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="signup-invited-email"`)
	require.Contains(t, body, `value="`+invited+`" readonly`)
	token := strings.TrimPrefix(fresh, "/signup?invite=")
	// An email posted with the form changes nothing: the address is the
	// invitation's.
	resp = c.Post(fresh, "/signup", url.Values{"invite": {token}, "email": {"other@example.com"}, "name": {"Ada"}, "password": {"short"}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-password"`)
	require.Contains(t, body, `value="Ada"`)
	resp = c.Post(fresh, "/signup", url.Values{"invite": {token}, "email": {"other@example.com"}, "name": {"Ada"}, "password": {"password of ada"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, "/", resp.Header.Get("Location"))
	_, body = c.Get("/")
	require.Contains(t, body, `data-testid="dashboard-greeting">Welcome, Ada<`)
	a := b.Account(t, invited)
	require.True(t, a.Verified)
	require.False(t, b.UserExists(t, "other@example.com"))
	require.Equal(t, []string{"user.signup", "user.sign_in:invitation"}, b.AuditTrail(t, a.ID))

	// Used once.
	code, body = b.Client(t).Get(fresh)
	require.Equal(t, http.StatusGone, code)
	require.Contains(t, body, "This invitation was used already")
	_, body = admin.Get("/admin/settings/sign-up")
	require.Regexp(t, `data-email="`+regexp.QuoteMeta(invited)+`" data-state="accepted"`, body)

	// Revoked.
	withdrawn := handlerstest.UniqueEmail("withdrawn")
	resp = admin.Post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {withdrawn}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	wlink := strings.TrimPrefix(b.InvitationLink(t, withdrawn, 1), b.Server.URL)
	wid := b.InvitationID(t, withdrawn)
	resp = admin.Post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations/"+wid+"/revoke", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	code, body = b.Client(t).Get(wlink)
	require.Equal(t, http.StatusGone, code)
	require.Contains(t, body, "This invitation was withdrawn by an admin.")
	resp = b.Client(t).Post("/login", "/signup", url.Values{"invite": {strings.TrimPrefix(wlink, "/signup?invite=")}, "name": {"W"}, "password": {"password of w"}})
	require.Equal(t, http.StatusGone, resp.StatusCode)
	require.False(t, b.UserExists(t, withdrawn))
	resp = admin.Post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations/"+wid+"/revoke", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.Get("/admin/settings/sign-up")
	require.Contains(t, body, "That invitation was accepted or revoked already.")
	resp = admin.Post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations/999999/revoke", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// Expired.
	late := handlerstest.UniqueEmail("late")
	resp = admin.Post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {late}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	llink := strings.TrimPrefix(b.InvitationLink(t, late, 1), b.Server.URL)
	_, err := b.Pool.Exec(context.Background(), "UPDATE invitations SET expires_at = now() - interval '1 second' WHERE lower(email) = lower($1)", late)
	require.NoError(t, err)
	code, body = b.Client(t).Get(llink)
	require.Equal(t, http.StatusGone, code)
	require.Contains(t, body, "This invitation has expired.")
	_, body = admin.Get("/admin/settings/sign-up")
	require.Regexp(t, `data-email="`+regexp.QuoteMeta(late)+`" data-state="expired"`, body)

	require.Len(t, b.AuditEvents(t, "admin.invitation_create"), 3)
	require.Len(t, b.AuditEvents(t, "admin.invitation_resend"), 1)
	require.Equal(t, []map[string]any{{"email": withdrawn}}, b.AuditEvents(t, "admin.invitation_revoke"))
}

// TestOAuthSignUpPolicy: a first sign-in with a provider makes no account
// when sign-up is closed, invite-only without an invitation, or at a
// domain not allowed; an invitation of the address admits it; accounts
// that exist sign in whatever the policy.
func TestOAuthSignUpPolicy(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupOAuth(t)
	admin, _ := b.SignedUpAdmin(t, "oauthgate")
	existing := handlerstest.UniqueEmail("existing-gh")
	b.GitHub.SignIn(handlerstest.Person{ID: "1001", Login: "existing", Name: "Existing", Email: existing, Verified: true})
	require.Equal(t, "/", b.Client(t).SignInWith("github"))

	setSignUp(t, admin, "closed", "")
	newcomer := handlerstest.UniqueEmail("newcomer")
	b.Google.SignIn(handlerstest.Person{ID: "g-2002", Name: "Newcomer", Email: newcomer, Verified: true})
	c := b.Client(t)
	require.Equal(t, "/login", c.SignInWith("google"))
	_, body := c.Get("/login")
	require.Contains(t, body, "Sign-up is closed: new accounts are not being made.")
	require.False(t, b.UserExists(t, newcomer))
	require.Equal(t, "/", b.Client(t).SignInWith("github"), "the existing account signs in")

	setSignUp(t, admin, "invite_only", "")
	c = b.Client(t)
	require.Equal(t, "/login", c.SignInWith("google"))
	_, body = c.Get("/login")
	require.Contains(t, body, "Sign-up is by invitation only")
	require.False(t, b.UserExists(t, newcomer))

	setSignUp(t, admin, "open", "example.org")
	c = b.Client(t)
	require.Equal(t, "/login", c.SignInWith("google"))
	_, body = c.Get("/login")
	require.Contains(t, body, "Accounts can only be made with an address at an allowed domain.")
	require.False(t, b.UserExists(t, newcomer))

	// Invited, the address signs up with the provider, and the invitation
	// is used up.
	setSignUp(t, admin, "closed", "")
	resp := admin.Post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {newcomer}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	// The link, read before the sign-in mails its notice to the address.
	link := strings.TrimPrefix(b.InvitationLink(t, newcomer, 1), b.Server.URL)
	require.Equal(t, "/", b.Client(t).SignInWith("google"))
	require.True(t, b.Account(t, newcomer).Verified)
	_, body = admin.Get("/admin/settings/sign-up")
	require.Regexp(t, `data-email="`+regexp.QuoteMeta(newcomer)+`" data-state="accepted"`, body)
	code, _ := b.Client(t).Get(link)
	require.Equal(t, http.StatusGone, code)
}
