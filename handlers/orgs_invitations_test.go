package handlers_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// orgInvitationLink is the path of the link the newest organization
// invitation mailed to email carries.
var orgInvitationLink = regexp.MustCompile(`/orgs/invitations/[A-Za-z0-9]+`)

// TestOrgInvitations: an owner invites an address from the organization's
// page; the mailed link, opened signed out, asks to sign in first; the
// account with the invited address signs up, opens it and accepts, and
// works in the organization in the invited role. Another account cannot
// accept it; a used or revoked link does not work; a viewer cannot
// invite; a bad address is shown at the field.
func TestOrgInvitations(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	owner, ownerEmail := b.SignedUpUser(t, "inviter")
	resp := owner.Post("/orgs", "/orgs", url.Values{"name": {"Platform team"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	page := resp.Header.Get("Location")
	require.Regexp(t, `^/orgs/\d+$`, page)

	resp = owner.Post(page, page+"/invitations", url.Values{"email": {"not an address"}, "role": {"viewer"}})
	body := handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="org-invite-email-error"`)
	require.Contains(t, body, `value="not an address"`)

	invited := handlerstest.UniqueEmail("newcomer")
	resp = owner.Post(page, page+"/invitations", url.Values{"email": {invited}, "role": {"viewer"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = owner.Get(page)
	require.Contains(t, body, "Invitation sent.")
	require.Regexp(t, `data-testid="org-invitation-email">`+regexp.QuoteMeta(invited)+`</td>`, body)
	require.Contains(t, body, `data-testid="org-invitation-state">Pending`)

	msg := b.WaitMail(t, invited, "You are invited to Platform team on KubeBYON")
	require.Contains(t, msg.Text, ownerEmail+" invited you")
	link := orgInvitationLink.FindString(msg.Text)
	require.NotEmpty(t, link, msg.Text)

	// Signed out: sign in (or up) first, then back to the link.
	newcomer := b.Client(t)
	resp, err := newcomer.HTTP.Get(newcomer.Base + link)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "/login?next="+url.QueryEscape(link))

	// Another account cannot accept it.
	other, _ := b.SignedUpUser(t, "bystander")
	code, body := other.Get(link)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="org-invitation-problem"`)
	require.NotContains(t, body, `data-testid="org-invitation-accept"`)
	resp = other.Post(link, link+"/accept", nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode)

	// The invited address signs up from the sign-in page, which passes
	// the link on, and is back at the link once the code proves the
	// address; then accepts.
	code, body = newcomer.Get("/login?next=" + url.QueryEscape(link))
	require.Equal(t, http.StatusOK, code)
	signUpLink := regexp.MustCompile(`href="(/signup\?next=[^"]+)" data-testid="login-signup"`).FindStringSubmatch(body)
	require.NotNil(t, signUpLink, "the sign-in page's sign-up link passes the link on")
	code, _ = newcomer.Get(html.UnescapeString(signUpLink[1]))
	require.Equal(t, http.StatusOK, code)
	handlerstest.SignUp(t, newcomer, invited, "Newcomer", "password of newcomer")
	var verify string
	for _, m := range b.WaitMessages(t, invited, 2) {
		if strings.HasPrefix(m.Subject, "Your KubeBYON code") {
			verify = handlerstest.CodeFrom(t, m)
		}
	}
	require.NotEmpty(t, verify)
	resp = newcomer.Post("/signup/verify?email="+url.QueryEscape(invited), "/signup/verify", url.Values{"email": {invited}, "code": {verify}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, link, resp.Header.Get("Location"), "back to the invitation")
	code, body = newcomer.Get(link)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "invited "+invited+" to the organization Platform team, as Viewer")
	resp = newcomer.Post(link, link+"/accept", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, page, resp.Header.Get("Location"))
	_, body = newcomer.Get(page)
	require.Contains(t, body, "You joined the organization.")
	require.Contains(t, body, `data-testid="org-my-role">Your role: Viewer`)
	require.NotContains(t, body, `data-testid="org-invite-form"`, "a viewer cannot invite")
	_, body = newcomer.Get("/orgs")
	require.Regexp(t, `(?s)Platform team.*org-badge-current`, body)

	// Used once; a viewer's invitation attempt is refused.
	resp = newcomer.Post(link, link+"/accept", nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	resp = newcomer.Post(page, page+"/invitations", url.Values{"email": {"x@example.com"}, "role": {"viewer"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	_, body = owner.Get(page)
	require.Contains(t, body, `data-testid="org-invitation-state">Accepted`)

	// Revoked: the link no longer works.
	late := handlerstest.UniqueEmail("late")
	resp = owner.Post(page, page+"/invitations", url.Values{"email": {late}, "role": {"member"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	lateLink := orgInvitationLink.FindString(b.WaitMail(t, late, "You are invited to Platform team on KubeBYON").Text)
	_, body = owner.Get(page)
	revoke := regexp.MustCompile(`action="(/orgs/\d+/invitations/\d+/revoke)"`).FindStringSubmatch(body)
	require.NotNil(t, revoke, body)
	resp = owner.Post(page, revoke[1], nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = owner.Get(page)
	require.Contains(t, body, "Invitation revoked")
	code, body = other.Get(lateLink)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "was accepted, revoked or has expired")
	code, _ = other.Get("/orgs/invitations/" + strings.Repeat("x", 20))
	require.Equal(t, http.StatusNotFound, code)
}
