package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

func TestSettingsNeedSignIn(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c := b.Client(t)
	for _, p := range []string{"/settings/profile", "/settings/notifications"} {
		resp, err := c.HTTP.Get(b.Server.URL + p)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, p)
		require.Equal(t, "/login?next="+url.QueryEscape(p), resp.Header.Get("Location"), p)
	}
}

func TestUpdateProfile(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "profile")
	id := b.UserID(t, email)

	tests := []struct {
		name, field, msg string
		form             url.Values
	}{
		{"no name", "name", "Enter your name.", url.Values{"name": {"   "}, "language": {""}}},
		{"long name", "name", "Use at most 100 characters.", url.Values{"name": {strings.Repeat("名", 101)}, "language": {""}}},
		{"control character", "name", "Remove line breaks", url.Values{"name": {"Ada\x07Lovelace"}, "language": {""}}},
		{"unknown language", "language", "Choose a language from the list.", url.Values{"name": {"Ada"}, "language": {"fr"}}},
	}
	for _, tt := range tests {
		resp := c.Post(handlerstest.ProfilePage, handlerstest.ProfilePage, tt.form)
		body := handlerstest.ReadBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tt.name)
		require.Contains(t, body, `data-testid="error-`+tt.field+`">`+tt.msg, tt.name)
	}
	// Text PostgreSQL cannot store is refused before the handler runs
	// (rejectUnstorableInput), on the error page that names the field.
	for _, name := range []string{"Ada\x00Lovelace", "Ada \xff"} {
		resp := c.Post(handlerstest.ProfilePage, handlerstest.ProfilePage, url.Values{"name": {name}, "language": {""}})
		body := handlerstest.ReadBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, name)
		require.Contains(t, body, "“name”: Use text without NUL characters or invalid UTF-8.", name)
	}
	require.NotContains(t, b.Audits(t, id), "user.update_profile", "nothing is saved from a bad form")

	resp := c.Post(handlerstest.ProfilePage, handlerstest.ProfilePage, url.Values{"name": {"  Ada King  "}, "language": {"zh-CN"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, handlerstest.ProfilePage, resp.Header.Get("Location"))

	// The next page is in Chinese, whatever the browser asks for.
	code, body := c.Get(handlerstest.ProfilePage)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<html lang="zh-CN">`)
	require.Contains(t, body, "个人资料已保存。")
	require.Contains(t, body, `value="Ada King"`, "the name is saved trimmed")
	require.Contains(t, b.Audits(t, id), "user.update_profile")

	// "Same as my browser" stores no language.
	resp = c.Post(handlerstest.ProfilePage, handlerstest.ProfilePage, url.Values{"name": {"Ada King"}, "language": {""}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get(handlerstest.ProfilePage)
	require.Contains(t, body, `<html lang="en">`)
	var lang string
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT language FROM users WHERE id = $1", id).Scan(&lang))
	require.Empty(t, lang)
}

func TestChangePassword(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "passwd")
	id := b.UserID(t, email)
	other := b.SignIn(t, email, "password of passwd")

	resp := c.Post(handlerstest.ProfilePage, "/settings/password", url.Values{"current_password": {"not my password"}, "new_password": {"a new long password"}})
	body := handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-current_password">That is not your current password.`)
	require.NotContains(t, body, "not my password", "passwords are never echoed")

	resp = c.Post(handlerstest.ProfilePage, "/settings/password", url.Values{"current_password": {"password of passwd"}, "new_password": {"short"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-new_password">Use at least 12 characters.`)
	require.True(t, other.SignedIn(), "a refused change ends nothing")

	resp = c.Post(handlerstest.ProfilePage, "/settings/password", url.Values{"current_password": {"password of passwd"}, "new_password": {"a new long password"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))

	require.True(t, c.SignedIn(), "the browser that changed it stays signed in")
	require.False(t, other.SignedIn(), "every other session ended")
	require.Contains(t, b.Audits(t, id), "user.change_password")
	msgs := b.WaitMessages(t, email, 4) // code, 2 new sign-ins, this
	handlerstest.WithSubject(t, msgs, "Your KubeBYON password was changed")

	resp = b.Client(t).Post("/login", "/login", url.Values{"email": {email}, "password": {"password of passwd"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	b.SignIn(t, email, "a new long password")
}

// TestSetFirstPassword is for accounts made through OAuth, which have no
// password: they set one without a current password.
func TestSetFirstPassword(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "oauthuser")
	_, err := b.Pool.Exec(context.Background(), "UPDATE users SET password_hash = NULL WHERE lower(email) = lower($1)", email)
	require.NoError(t, err)

	_, body := c.Get(handlerstest.ProfilePage)
	require.Contains(t, body, `data-testid="no-password"`)
	require.NotContains(t, body, `name="current_password"`)

	resp := c.Post(handlerstest.ProfilePage, "/settings/password", url.Values{"new_password": {"my first password"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	b.SignIn(t, email, "my first password")
	_, body = c.Get(handlerstest.ProfilePage)
	require.Contains(t, body, `name="current_password"`, "from now on the current password is asked for")
}

func TestChangeEmail(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	c, oldEmail := b.SignedUpUser(t, "mover")
	_, takenEmail := b.SignedUpUser(t, "taken")
	id := b.UserID(t, oldEmail)
	newEmail := handlerstest.UniqueEmail("moved")

	bad := []struct{ name, email, msg string }{
		{"invalid", "not-an-address", "Enter a valid email address"},
		{"same, other case", strings.ToUpper(oldEmail), "That is already your address."},
		{"taken by another account", strings.ToUpper(takenEmail), "Another account uses this address. Choose a different one."},
	}
	for _, tt := range bad {
		resp := c.Post(handlerstest.ProfilePage, "/settings/email", url.Values{"new_email": {tt.email}, "email_password": {"password of mover"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tt.name)
		require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-new_email">`+tt.msg, tt.name)
	}
	require.Zero(t, b.EmailJobs(t, takenEmail, "EmailChangeCode"), "no code goes to another account's address")

	// A stolen session alone cannot move the account: the password is asked.
	_, body := c.Get(handlerstest.ProfilePage)
	require.Contains(t, body, `name="email_password"`)
	for _, pw := range []string{"", "a guess"} {
		resp := c.Post(handlerstest.ProfilePage, "/settings/email", url.Values{"new_email": {newEmail}, "email_password": {pw}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		body := handlerstest.ReadBody(t, resp)
		require.Contains(t, body, `data-testid="error-email_password">`)
		require.NotContains(t, body, "a guess", "the password is not shown again")
	}
	require.Zero(t, b.EmailJobs(t, newEmail, "EmailChangeCode"), "no code without the password")

	resp := c.Post(handlerstest.ProfilePage, "/settings/email", url.Values{"new_email": {newEmail}, "email_password": {"password of mover"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	first := handlerstest.CodeFrom(t, b.WaitMessages(t, newEmail, 1)[0])
	require.Zero(t, b.EmailJobs(t, oldEmail, "EmailChangeCode"), "the code goes to the new address only")
	_, body = c.Get(handlerstest.ProfilePage)
	require.Contains(t, body, `data-testid="pending-email"`)
	require.Contains(t, body, newEmail)
	require.Contains(t, body, `data-testid="current-email">`+oldEmail, "the address changes only with the code")

	wrong := "000000"
	if first == wrong {
		wrong = "111111"
	}
	resp = c.Post(handlerstest.ProfilePage, "/settings/email/confirm", url.Values{"code": {wrong}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "That code is not right.")

	resp = c.Post(handlerstest.ProfilePage, "/settings/email/confirm", url.Values{"code": {"12ab"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-code">Enter the 6 digits from the email.`)

	resp = c.Post(handlerstest.ProfilePage, "/settings/email/resend", nil)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "one code a minute")
	require.Contains(t, handlerstest.ReadBody(t, resp), "less than a minute ago")

	_, err := b.Pool.Exec(ctx, "UPDATE email_codes SET expires_at = now() - interval '1 second' WHERE user_id = $1", id)
	require.NoError(t, err)
	resp = c.Post(handlerstest.ProfilePage, "/settings/email/confirm", url.Values{"code": {first}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "That code has expired.")

	_, err = b.Pool.Exec(ctx, "UPDATE email_codes SET created_at = now() - interval '61 seconds' WHERE user_id = $1", id)
	require.NoError(t, err)
	resp = c.Post(handlerstest.ProfilePage, "/settings/email/resend", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	second := handlerstest.CodeFrom(t, b.WaitMessages(t, newEmail, 2)[1])

	resp = c.Post(handlerstest.ProfilePage, "/settings/email/confirm", url.Values{"code": {second}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = c.Get(handlerstest.ProfilePage)
	require.Contains(t, body, `data-testid="current-email">`+newEmail)
	require.NotContains(t, body, `data-testid="pending-email"`)
	require.Equal(t, id, b.UserID(t, newEmail))
	require.Contains(t, b.Audits(t, id), "user.change_email")

	// The old address is told; the account signs in with the new one.
	msgs := b.WaitMessages(t, oldEmail, 3) // sign-up code, new sign-in, this
	require.Contains(t, handlerstest.WithSubject(t, msgs, "Your KubeBYON email address was changed").Text, newEmail)
	b.SignIn(t, strings.ToUpper(newEmail), "password of mover")

	// The code is single-use.
	resp = c.Post(handlerstest.ProfilePage, "/settings/email/confirm", url.Values{"code": {second}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
}

// TestChangeEmailTakenMeanwhile: the address is registered by someone else
// between the code being sent and entered.
func TestChangeEmailTakenMeanwhile(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "racer")
	target := handlerstest.UniqueEmail("contested")
	resp := c.Post(handlerstest.ProfilePage, "/settings/email", url.Values{"new_email": {target}, "email_password": {"password of racer"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	code := handlerstest.CodeFrom(t, b.WaitMessages(t, target, 1)[0])

	handlerstest.SignUp(t, b.Client(t), strings.ToUpper(target), "Someone Else", "someone else's password")
	resp = c.Post(handlerstest.ProfilePage, "/settings/email/confirm", url.Values{"code": {code}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "Another account uses this address.")
	id := b.UserID(t, email) // the account keeps its address
	require.NotContains(t, b.Audits(t, id), "user.change_email")

	// Cancelling drops the pending change.
	resp = c.Post(handlerstest.ProfilePage, "/settings/email/cancel", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body := c.Get(handlerstest.ProfilePage)
	require.NotContains(t, body, `data-testid="pending-email"`)
	require.Contains(t, body, `data-testid="email-form"`)
	require.Contains(t, b.Audits(t, id), "user.change_email_cancel")
}

// TestPasswordChangeMayRevokeKeys: a password change leaves the user's
// API keys working unless they ask for them to be revoked too, which the
// form offers.
func TestPasswordChangeMayRevokeKeys(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "keyholder")
	kept := c.CreateKey("kept")
	_, page := c.Get("/settings/profile")
	require.Contains(t, page, `name="revoke_api_keys"`)

	resp := c.Post("/settings/profile", "/settings/password", url.Values{"current_password": {"password of keyholder"}, "new_password": {"a second password here"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, http.StatusOK, b.APICall(t, http.MethodGet, "/api/v1/clusters", kept, "").Status, "not asked: the key still works")

	resp = c.Post("/settings/profile", "/settings/password", url.Values{"current_password": {"a second password here"}, "new_password": {"a third password here"}, "revoke_api_keys": {"on"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, http.StatusUnauthorized, b.APICall(t, http.MethodGet, "/api/v1/clusters", kept, "").Status, "asked: revoked")
}
