package handlers_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// setSignUp saves the sign-up settings as the admin c.
func setSignUp(t *testing.T, c *client, policy, domains string) {
	t.Helper()
	resp := c.post("/admin/settings/sign-up", "/admin/settings/sign-up", url.Values{"policy": {policy}, "allowedDomains": {domains}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
}

// signUpEvents are the details of the admins' sign-up settings changes.
func (b *testBundle) signUpEvents(t *testing.T, action string) []map[string]any {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), "SELECT details FROM audit_events WHERE action = $1 ORDER BY id", action)
	require.NoError(t, err)
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var raw []byte
		require.NoError(t, rows.Scan(&raw))
		m := map[string]any{}
		require.NoError(t, json.Unmarshal(raw, &m))
		out = append(out, m)
	}
	require.NoError(t, rows.Err())
	return out
}

func (b *testBundle) userExists(t *testing.T, email string) bool {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM users WHERE lower(email) = lower($1)", email).Scan(&n))
	return n > 0
}

var inviteLink = regexp.MustCompile(`(http://\S+/signup\?invite=([A-Z2-7]+))`)

// invitationLink is the link of the newest invitation mailed to email,
// the n-th the address got.
func (b *testBundle) invitationLink(t *testing.T, email string, n int) string {
	t.Helper()
	msgs := b.mail.WaitMessages(t, email, n)
	m := inviteLink.FindStringSubmatch(msgs[n-1].Text)
	require.NotNil(t, m, "no link in %q", msgs[n-1].Text)
	return m[1]
}

// TestAdminSignUpHiddenFromOthers: visitors and users get 404 from every
// sign-up route and change nothing.
func TestAdminSignUpHiddenFromOthers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	user, _ := b.signedUpUser(t, "notadmin")
	visitor := b.client(t)
	for _, who := range []struct {
		name     string
		c        *client
		formPage string
	}{{"visitor", visitor, "/login"}, {"user", user, "/"}} {
		code, _ := who.c.get("/admin/settings/sign-up")
		require.Equal(t, http.StatusNotFound, code, who.name)
		for _, path := range []string{
			"/admin/settings/sign-up", "/admin/settings/sign-up/invitations",
			"/admin/settings/sign-up/invitations/1/resend", "/admin/settings/sign-up/invitations/1/revoke",
		} {
			resp := who.c.post(who.formPage, path, url.Values{"policy": {"closed"}, "email": {"pwned@example.com"}})
			require.Equal(t, http.StatusNotFound, resp.StatusCode, who.name+" "+path)
		}
	}
	require.Zero(t, b.count(t, "invitations"))
	require.Zero(t, b.count(t, "settings"))
	require.Empty(t, b.signUpEvents(t, "admin.signup_update"))
	// Sign-up is still open.
	signUp(t, b.client(t), uniqueEmail("stillopen"), "Still Open", "password of still open")
}

// TestAdminSignUpSettings: the page shows the stored policy; a change is
// audited with the fields it changed; bad input is refused at its field
// with what was typed kept.
func TestAdminSignUpSettings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, _ := b.signedUpAdmin(t, "policymaker")

	code, body := admin.get("/admin/settings/sign-up")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-settings-nav"`)
	require.Regexp(t, `<a href="/admin/settings/sign-up"[^>]*aria-current="page"`, body)
	require.Regexp(t, `value="open"\s+checked`, body)
	require.Contains(t, body, `data-testid="invitations-empty"`)

	resp := admin.post("/admin/settings/sign-up", "/admin/settings/sign-up", url.Values{"policy": {"invite_only"}, "allowedDomains": {"Example.com\n@corp.example.org"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	_, body = admin.get("/admin/settings/sign-up")
	require.Contains(t, body, "Sign-up settings saved.")
	require.Regexp(t, `value="invite_only"\s+checked`, body)
	require.Contains(t, body, ">corp.example.org\nexample.com</textarea>")

	// The same again changes nothing and writes nothing.
	setSignUp(t, admin, "invite_only", "example.com corp.example.org")
	_, body = admin.get("/admin/settings/sign-up")
	require.Contains(t, body, "Nothing changed.")

	resp = admin.post("/admin/settings/sign-up", "/admin/settings/sign-up", url.Values{"policy": {"sometimes"}, "allowedDomains": {"example.com\nnot a domain!"}})
	body = readBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-policy"`)
	require.Contains(t, body, `data-testid="error-allowedDomains">Each line must be a domain name`)
	require.Contains(t, html.UnescapeString(body), ">example.com\nnot a domain!</textarea>", "what was typed is kept")

	require.Equal(t, []map[string]any{{
		"changed": []any{"allowedDomains", "policy"}, "policy": "invite_only",
		"allowedDomains": []any{"corp.example.org", "example.com"},
	}}, b.signUpEvents(t, "admin.signup_update"))
}

// TestSignUpPolicies: closed and invite-only take the form away and refuse
// what is posted anyway; allowed domains refuse other addresses at the
// field; a code mailed before sign-up closed no longer makes an account;
// existing accounts sign in whatever the policy.
func TestSignUpPolicies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, _ := b.signedUpAdmin(t, "gatekeeper")
	_, memberEmail := b.signedUpUser(t, "member")
	pending := uniqueEmail("pending")
	signUp(t, b.client(t), pending, "Pending", "password of pending")
	pendingCode := codeFrom(t, b.mail.WaitMessages(t, pending, 1)[0])

	for _, tt := range []struct{ policy, text string }{
		{"closed", "Sign-up is closed"},
		{"invite_only", "Sign-up is by invitation only"},
	} {
		setSignUp(t, admin, tt.policy, "")
		c := b.client(t)
		code, body := c.get("/signup")
		require.Equal(t, http.StatusOK, code, tt.policy)
		require.Contains(t, body, tt.text)
		require.NotContains(t, body, `data-testid="signup-form"`)
		email := uniqueEmail("refused")
		resp := c.post("/login", "/signup", url.Values{"email": {email}, "name": {"Refused"}, "password": {"password of refused"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode, tt.policy)
		require.Contains(t, readBody(t, resp), tt.text)
		require.False(t, b.userExists(t, email), tt.policy)

		// The code mailed while sign-up was open no longer verifies.
		resp = c.post("/login", "/signup/verify", url.Values{"email": {pending}, "code": {pendingCode}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tt.policy)
		require.Contains(t, readBody(t, resp), tt.text)
		require.False(t, b.account(t, pending).Verified)

		resp = b.client(t).post("/login", "/login", url.Values{"email": {memberEmail}, "password": {"password of member"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "existing accounts still sign in")
	}

	setSignUp(t, admin, "open", "example.com")
	c := b.client(t)
	_, body := c.get("/signup")
	require.Contains(t, body, `data-testid="signup-domains">Accounts can be made with addresses at: example.com.`)
	elsewhere := strings.Replace(uniqueEmail("elsewhere"), "@example.com", "@example.org", 1)
	resp := c.post("/signup", "/signup", url.Values{"email": {elsewhere}, "name": {"Elsewhere"}, "password": {"password of elsewhere"}})
	body = readBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-email">Accounts can only be made with an address at an allowed domain.`)
	require.Contains(t, body, `value="`+elsewhere+`"`, "what was typed is kept")
	require.Contains(t, body, `value="Elsewhere"`)
	require.False(t, b.userExists(t, elsewhere))
	// A subdomain is another domain.
	resp = c.post("/signup", "/signup", url.Values{"email": {"sub@eu.example.com"}, "name": {"Sub"}, "password": {"password of sub"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	// The listed domain, in any case, signs up.
	signUp(t, c, "Listed@EXAMPLE.com", "Listed", "password of listed")
	require.True(t, b.userExists(t, "listed@example.com"))
}

// TestInvitations: an admin invites an address, which gets the link by
// email; the link opens the form for that address even under invite-only,
// works once, and says clearly when it no longer works. Every action is
// audited.
func TestInvitations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, adminEmail := b.signedUpAdmin(t, "inviter")
	setSignUp(t, admin, "invite_only", "example.com")
	// Only example.com may sign up: an invitation admits another domain.
	invited := strings.Replace(uniqueEmail("invited"), "@example.com", "@elsewhere.example.org", 1)

	// Bad input is refused at the field, typed value kept.
	resp := admin.post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {"not an address"}})
	body := readBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-email"`)
	require.Contains(t, body, `value="not an address"`)
	resp = admin.post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {adminEmail}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), "This address has an account already.")

	resp = admin.post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {invited}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	_, body = admin.get("/admin/settings/sign-up")
	require.Contains(t, body, "Invitation sent.")
	require.Regexp(t, `data-testid="invitation-row" data-email="`+regexp.QuoteMeta(invited)+`" data-state="pending"`, body)
	resp = admin.post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {strings.ToUpper(invited)}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), "This address has a pending invitation")

	msg := b.mail.WaitMessages(t, invited, 1)[0]
	require.Equal(t, "You are invited to KubeBYON", msg.Subject)
	require.Contains(t, msg.Text, adminEmail+" invited you")
	link := b.invitationLink(t, invited, 1)
	require.True(t, strings.HasPrefix(link, b.server.URL+"/signup?invite="), link)
	path := strings.TrimPrefix(link, b.server.URL)

	// Resend: a new link; the old one stops working.
	id := b.invitationID(t, invited)
	resp = admin.post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations/"+id+"/resend", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	fresh := strings.TrimPrefix(b.invitationLink(t, invited, 2), b.server.URL)
	require.NotEqual(t, path, fresh)
	c := b.client(t)
	code, body := c.get(path)
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, "This invitation link is not valid.")

	code, body = c.get(fresh)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="signup-invited-email"`)
	require.Contains(t, body, `value="`+invited+`" readonly`)
	token := strings.TrimPrefix(fresh, "/signup?invite=")
	// An email posted with the form changes nothing: the address is the
	// invitation's.
	resp = c.post(fresh, "/signup", url.Values{"invite": {token}, "email": {"other@example.com"}, "name": {"Ada"}, "password": {"short"}})
	body = readBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-password"`)
	require.Contains(t, body, `value="Ada"`)
	resp = c.post(fresh, "/signup", url.Values{"invite": {token}, "email": {"other@example.com"}, "name": {"Ada"}, "password": {"password of ada"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, "/", resp.Header.Get("Location"))
	_, body = c.get("/")
	require.Contains(t, body, `data-testid="dashboard-greeting">Welcome, Ada<`)
	a := b.account(t, invited)
	require.True(t, a.Verified)
	require.False(t, b.userExists(t, "other@example.com"))
	require.Equal(t, []string{"user.signup", "user.sign_in:invitation"}, b.auditTrail(t, a.ID))

	// Used once.
	code, body = b.client(t).get(fresh)
	require.Equal(t, http.StatusGone, code)
	require.Contains(t, body, "This invitation was used already")
	_, body = admin.get("/admin/settings/sign-up")
	require.Regexp(t, `data-email="`+regexp.QuoteMeta(invited)+`" data-state="accepted"`, body)

	// Revoked.
	withdrawn := uniqueEmail("withdrawn")
	resp = admin.post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {withdrawn}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	wlink := strings.TrimPrefix(b.invitationLink(t, withdrawn, 1), b.server.URL)
	wid := b.invitationID(t, withdrawn)
	resp = admin.post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations/"+wid+"/revoke", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	code, body = b.client(t).get(wlink)
	require.Equal(t, http.StatusGone, code)
	require.Contains(t, body, "This invitation was withdrawn by an admin.")
	resp = b.client(t).post("/login", "/signup", url.Values{"invite": {strings.TrimPrefix(wlink, "/signup?invite=")}, "name": {"W"}, "password": {"password of w"}})
	require.Equal(t, http.StatusGone, resp.StatusCode)
	require.False(t, b.userExists(t, withdrawn))
	resp = admin.post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations/"+wid+"/revoke", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.get("/admin/settings/sign-up")
	require.Contains(t, body, "That invitation was accepted or revoked already.")
	resp = admin.post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations/999999/revoke", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// Expired.
	late := uniqueEmail("late")
	resp = admin.post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {late}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	llink := strings.TrimPrefix(b.invitationLink(t, late, 1), b.server.URL)
	_, err := b.pool.Exec(context.Background(), "UPDATE invitations SET expires_at = now() - interval '1 second' WHERE lower(email) = lower($1)", late)
	require.NoError(t, err)
	code, body = b.client(t).get(llink)
	require.Equal(t, http.StatusGone, code)
	require.Contains(t, body, "This invitation has expired.")
	_, body = admin.get("/admin/settings/sign-up")
	require.Regexp(t, `data-email="`+regexp.QuoteMeta(late)+`" data-state="expired"`, body)

	require.Len(t, b.signUpEvents(t, "admin.invitation_create"), 3)
	require.Len(t, b.signUpEvents(t, "admin.invitation_resend"), 1)
	require.Equal(t, []map[string]any{{"email": withdrawn}}, b.signUpEvents(t, "admin.invitation_revoke"))
}

func (b *testBundle) invitationID(t *testing.T, email string) string {
	t.Helper()
	var id string
	require.NoError(t, b.pool.QueryRow(context.Background(),
		"SELECT id::text FROM invitations WHERE lower(email) = lower($1) ORDER BY id DESC LIMIT 1", email).Scan(&id))
	return id
}

// TestOAuthSignUpPolicy: a first sign-in with a provider makes no account
// when sign-up is closed, invite-only without an invitation, or at a
// domain not allowed; an invitation of the address admits it; accounts
// that exist sign in whatever the policy.
func TestOAuthSignUpPolicy(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	admin, _ := b.signedUpAdmin(t, "oauthgate")
	existing := uniqueEmail("existing-gh")
	b.github.signIn(person{ID: "1001", Login: "existing", Name: "Existing", Email: existing, Verified: true})
	require.Equal(t, "/", b.client(t).signInWith("github"))

	setSignUp(t, admin, "closed", "")
	newcomer := uniqueEmail("newcomer")
	b.google.signIn(person{ID: "g-2002", Name: "Newcomer", Email: newcomer, Verified: true})
	c := b.client(t)
	require.Equal(t, "/login", c.signInWith("google"))
	_, body := c.get("/login")
	require.Contains(t, body, "Sign-up is closed: new accounts are not being made.")
	require.False(t, b.userExists(t, newcomer))
	require.Equal(t, "/", b.client(t).signInWith("github"), "the existing account signs in")

	setSignUp(t, admin, "invite_only", "")
	c = b.client(t)
	require.Equal(t, "/login", c.signInWith("google"))
	_, body = c.get("/login")
	require.Contains(t, body, "Sign-up is by invitation only")
	require.False(t, b.userExists(t, newcomer))

	setSignUp(t, admin, "open", "example.org")
	c = b.client(t)
	require.Equal(t, "/login", c.signInWith("google"))
	_, body = c.get("/login")
	require.Contains(t, body, "Accounts can only be made with an address at an allowed domain.")
	require.False(t, b.userExists(t, newcomer))

	// Invited, the address signs up with the provider, and the invitation
	// is used up.
	setSignUp(t, admin, "closed", "")
	resp := admin.post("/admin/settings/sign-up", "/admin/settings/sign-up/invitations", url.Values{"email": {newcomer}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	// The link, read before the sign-in mails its notice to the address.
	link := strings.TrimPrefix(b.invitationLink(t, newcomer, 1), b.server.URL)
	require.Equal(t, "/", b.client(t).signInWith("google"))
	require.True(t, b.account(t, newcomer).Verified)
	_, body = admin.get("/admin/settings/sign-up")
	require.Regexp(t, `data-email="`+regexp.QuoteMeta(newcomer)+`" data-state="accepted"`, body)
	code, _ := b.client(t).get(link)
	require.Equal(t, http.StatusGone, code)
}
