package handlers_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

// userID returns the id of the account with an email.
func (b *testBundle) userID(t *testing.T, email string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT id FROM users WHERE lower(email) = lower($1)", email).Scan(&id))
	return id
}

// audits returns the actions of a user's audit events, oldest first.
func (b *testBundle) audits(t *testing.T, userID int64) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), "SELECT action FROM audit_events WHERE actor_id = $1 ORDER BY id", userID)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var a string
		require.NoError(t, rows.Scan(&a))
		out = append(out, a)
	}
	require.NoError(t, rows.Err())
	return out
}

// emailJobs counts the email jobs enqueued to an address with a template:
// what was sent, or will be, without waiting for the mail.
func (b *testBundle) emailJobs(t *testing.T, to, template string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM river_job WHERE kind = 'email' AND lower(args->>'to') = lower($1) AND args->>'template' = $2", to, template).Scan(&n))
	return n
}

// withSubject returns the message with a subject; mail workers run in
// parallel, so messages may arrive in another order than they were sent.
func withSubject(t *testing.T, msgs []testenv.Message, subject string) testenv.Message {
	t.Helper()
	for _, m := range msgs {
		if m.Subject == subject {
			return m
		}
	}
	require.Failf(t, "no such message", "%q not among %d messages", subject, len(msgs))
	return testenv.Message{}
}

// signIn signs in a new client with a password.
func (b *testBundle) signIn(t *testing.T, email, password string) *client {
	t.Helper()
	c := b.client(t)
	resp := c.post("/login", "/login", url.Values{"email": {email}, "password": {password}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	return c
}

// signedIn reports whether the client's session is still signed in.
func (c *client) signedIn() bool {
	c.t.Helper()
	code, _ := c.get("/settings/profile")
	return code == http.StatusOK
}

// upload posts a multipart form with one file, with the CSRF token of page.
func (c *client) upload(page, path, field, filename string, data []byte) *http.Response {
	c.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	require.NoError(c.t, w.WriteField("_csrf", c.csrf(page)))
	if field != "" {
		fw, err := w.CreateFormFile(field, filename)
		require.NoError(c.t, err)
		_, err = fw.Write(data)
		require.NoError(c.t, err)
	}
	require.NoError(c.t, w.Close())
	req, err := http.NewRequest(http.MethodPost, c.base+path, &body)
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := c.http.Do(req)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const profilePage = "/settings/profile"

func TestSettingsNeedSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.client(t)
	for _, p := range []string{"/settings/profile", "/settings/notifications"} {
		resp, err := c.http.Get(b.server.URL + p)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, p)
		require.Equal(t, "/login?next="+url.QueryEscape(p), resp.Header.Get("Location"), p)
	}
}

func TestUpdateProfile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, email := b.signedUpUser(t, "profile")
	id := b.userID(t, email)

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
		resp := c.post(profilePage, profilePage, tt.form)
		body := readBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tt.name)
		require.Contains(t, body, `data-testid="error-`+tt.field+`">`+tt.msg, tt.name)
	}
	// Text PostgreSQL cannot store is refused before the handler runs
	// (rejectUnstorableInput), on the error page that names the field.
	for _, name := range []string{"Ada\x00Lovelace", "Ada \xff"} {
		resp := c.post(profilePage, profilePage, url.Values{"name": {name}, "language": {""}})
		body := readBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, name)
		require.Contains(t, body, "“name”: Use text without NUL characters or invalid UTF-8.", name)
	}
	require.NotContains(t, b.audits(t, id), "user.update_profile", "nothing is saved from a bad form")

	resp := c.post(profilePage, profilePage, url.Values{"name": {"  Ada King  "}, "language": {"zh-CN"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, profilePage, resp.Header.Get("Location"))

	// The next page is in Chinese, whatever the browser asks for.
	code, body := c.get(profilePage)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<html lang="zh-CN">`)
	require.Contains(t, body, "个人资料已保存。")
	require.Contains(t, body, `value="Ada King"`, "the name is saved trimmed")
	require.Contains(t, b.audits(t, id), "user.update_profile")

	// "Same as my browser" stores no language.
	resp = c.post(profilePage, profilePage, url.Values{"name": {"Ada King"}, "language": {""}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.get(profilePage)
	require.Contains(t, body, `<html lang="en">`)
	var lang string
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT language FROM users WHERE id = $1", id).Scan(&lang))
	require.Empty(t, lang)
}

func TestChangePassword(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, email := b.signedUpUser(t, "passwd")
	id := b.userID(t, email)
	other := b.signIn(t, email, "password of passwd")

	resp := c.post(profilePage, "/settings/password", url.Values{"current_password": {"not my password"}, "new_password": {"a new long password"}})
	body := readBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-current_password">That is not your current password.`)
	require.NotContains(t, body, "not my password", "passwords are never echoed")

	resp = c.post(profilePage, "/settings/password", url.Values{"current_password": {"password of passwd"}, "new_password": {"short"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), `data-testid="error-new_password">Use at least 12 characters.`)
	require.True(t, other.signedIn(), "a refused change ends nothing")

	resp = c.post(profilePage, "/settings/password", url.Values{"current_password": {"password of passwd"}, "new_password": {"a new long password"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))

	require.True(t, c.signedIn(), "the browser that changed it stays signed in")
	require.False(t, other.signedIn(), "every other session ended")
	require.Contains(t, b.audits(t, id), "user.change_password")
	msgs := b.mail.WaitMessages(t, email, 4) // code, 2 new sign-ins, this
	withSubject(t, msgs, "Your KubeBYON password was changed")

	resp = b.client(t).post("/login", "/login", url.Values{"email": {email}, "password": {"password of passwd"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	b.signIn(t, email, "a new long password")
}

// TestSetFirstPassword is for accounts made through OAuth, which have no
// password: they set one without a current password.
func TestSetFirstPassword(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, email := b.signedUpUser(t, "oauthuser")
	_, err := b.pool.Exec(context.Background(), "UPDATE users SET password_hash = NULL WHERE lower(email) = lower($1)", email)
	require.NoError(t, err)

	_, body := c.get(profilePage)
	require.Contains(t, body, `data-testid="no-password"`)
	require.NotContains(t, body, `name="current_password"`)

	resp := c.post(profilePage, "/settings/password", url.Values{"new_password": {"my first password"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	b.signIn(t, email, "my first password")
	_, body = c.get(profilePage)
	require.Contains(t, body, `name="current_password"`, "from now on the current password is asked for")
}

func TestChangeEmail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c, oldEmail := b.signedUpUser(t, "mover")
	_, takenEmail := b.signedUpUser(t, "taken")
	id := b.userID(t, oldEmail)
	newEmail := uniqueEmail("moved")

	bad := []struct{ name, email, msg string }{
		{"invalid", "not-an-address", "Enter a valid email address"},
		{"same, other case", strings.ToUpper(oldEmail), "That is already your address."},
		{"taken by another account", strings.ToUpper(takenEmail), "Another account uses this address. Choose a different one."},
	}
	for _, tt := range bad {
		resp := c.post(profilePage, "/settings/email", url.Values{"new_email": {tt.email}, "email_password": {"password of mover"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tt.name)
		require.Contains(t, readBody(t, resp), `data-testid="error-new_email">`+tt.msg, tt.name)
	}
	require.Zero(t, b.emailJobs(t, takenEmail, "EmailChangeCode"), "no code goes to another account's address")

	// A stolen session alone cannot move the account: the password is asked.
	_, body := c.get(profilePage)
	require.Contains(t, body, `name="email_password"`)
	for _, pw := range []string{"", "a guess"} {
		resp := c.post(profilePage, "/settings/email", url.Values{"new_email": {newEmail}, "email_password": {pw}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		body := readBody(t, resp)
		require.Contains(t, body, `data-testid="error-email_password">`)
		require.NotContains(t, body, "a guess", "the password is not shown again")
	}
	require.Zero(t, b.emailJobs(t, newEmail, "EmailChangeCode"), "no code without the password")

	resp := c.post(profilePage, "/settings/email", url.Values{"new_email": {newEmail}, "email_password": {"password of mover"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	first := codeFrom(t, b.mail.WaitMessages(t, newEmail, 1)[0])
	require.Zero(t, b.emailJobs(t, oldEmail, "EmailChangeCode"), "the code goes to the new address only")
	_, body = c.get(profilePage)
	require.Contains(t, body, `data-testid="pending-email"`)
	require.Contains(t, body, newEmail)
	require.Contains(t, body, `data-testid="current-email">`+oldEmail, "the address changes only with the code")

	wrong := "000000"
	if first == wrong {
		wrong = "111111"
	}
	resp = c.post(profilePage, "/settings/email/confirm", url.Values{"code": {wrong}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), "That code is not right.")

	resp = c.post(profilePage, "/settings/email/confirm", url.Values{"code": {"12ab"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), `data-testid="error-code">Enter the 6 digits from the email.`)

	resp = c.post(profilePage, "/settings/email/resend", nil)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "one code a minute")
	require.Contains(t, readBody(t, resp), "less than a minute ago")

	_, err := b.pool.Exec(ctx, "UPDATE email_codes SET expires_at = now() - interval '1 second' WHERE user_id = $1", id)
	require.NoError(t, err)
	resp = c.post(profilePage, "/settings/email/confirm", url.Values{"code": {first}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), "That code has expired.")

	_, err = b.pool.Exec(ctx, "UPDATE email_codes SET created_at = now() - interval '61 seconds' WHERE user_id = $1", id)
	require.NoError(t, err)
	resp = c.post(profilePage, "/settings/email/resend", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	second := codeFrom(t, b.mail.WaitMessages(t, newEmail, 2)[1])

	resp = c.post(profilePage, "/settings/email/confirm", url.Values{"code": {second}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	_, body = c.get(profilePage)
	require.Contains(t, body, `data-testid="current-email">`+newEmail)
	require.NotContains(t, body, `data-testid="pending-email"`)
	require.Equal(t, id, b.userID(t, newEmail))
	require.Contains(t, b.audits(t, id), "user.change_email")

	// The old address is told; the account signs in with the new one.
	msgs := b.mail.WaitMessages(t, oldEmail, 3) // sign-up code, new sign-in, this
	require.Contains(t, withSubject(t, msgs, "Your KubeBYON email address was changed").Text, newEmail)
	b.signIn(t, strings.ToUpper(newEmail), "password of mover")

	// The code is single-use.
	resp = c.post(profilePage, "/settings/email/confirm", url.Values{"code": {second}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
}

// TestChangeEmailTakenMeanwhile: the address is registered by someone else
// between the code being sent and entered.
func TestChangeEmailTakenMeanwhile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, email := b.signedUpUser(t, "racer")
	target := uniqueEmail("contested")
	resp := c.post(profilePage, "/settings/email", url.Values{"new_email": {target}, "email_password": {"password of racer"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	code := codeFrom(t, b.mail.WaitMessages(t, target, 1)[0])

	signUp(t, b.client(t), strings.ToUpper(target), "Someone Else", "someone else's password")
	resp = c.post(profilePage, "/settings/email/confirm", url.Values{"code": {code}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), "Another account uses this address.")
	id := b.userID(t, email) // the account keeps its address
	require.NotContains(t, b.audits(t, id), "user.change_email")

	// Cancelling drops the pending change.
	resp = c.post(profilePage, "/settings/email/cancel", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body := c.get(profilePage)
	require.NotContains(t, body, `data-testid="pending-email"`)
	require.Contains(t, body, `data-testid="email-form"`)
	require.Contains(t, b.audits(t, id), "user.change_email_cancel")
}

// TestPasswordChangeMayRevokeKeys: a password change leaves the user's
// API keys working unless they ask for them to be revoked too, which the
// form offers.
func TestPasswordChangeMayRevokeKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, _ := b.signedUpUser(t, "keyholder")
	kept := c.createKey("kept")
	_, page := c.get("/settings/profile")
	require.Contains(t, page, `name="revoke_api_keys"`)

	resp := c.post("/settings/profile", "/settings/password", url.Values{"current_password": {"password of keyholder"}, "new_password": {"a second password here"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, http.StatusOK, b.apiCall(t, http.MethodGet, "/api/v1/clusters", kept, "").status, "not asked: the key still works")

	resp = c.post("/settings/profile", "/settings/password", url.Values{"current_password": {"a second password here"}, "new_password": {"a third password here"}, "revoke_api_keys": {"on"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, http.StatusUnauthorized, b.apiCall(t, http.MethodGet, "/api/v1/clusters", kept, "").status, "asked: revoked")
}
