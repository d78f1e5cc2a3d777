package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/passwords"
)

// TestSignUpFollowsTheBrowsersLanguage: a new account's language is "Same
// as my browser", while its code comes in the browser's language.
func TestSignUpFollowsTheBrowsersLanguage(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c := b.Client(t)
	c.HTTP.Transport = handlerstest.AcceptLanguage{Lang: "zh-CN,zh;q=0.9", Next: c.HTTP.Transport}
	email := handlerstest.UniqueEmail("browserlang")
	handlerstest.SignUp(t, c, email, "Li", "password of li")
	msg := b.WaitMessages(t, email, 1)[0]
	require.Contains(t, msg.Subject, "您的 KubeBYON 验证码", "the code comes in the browser's language")
	resp := c.Post("/signup/verify?email="+url.QueryEscape(email), "/signup/verify", url.Values{"email": {email}, "code": {handlerstest.CodeFrom(t, msg)}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))

	var lang string
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT language FROM users WHERE email = $1", email).Scan(&lang))
	require.Empty(t, lang, "the account follows the browser")
	_, page := c.Get("/settings/profile")
	require.Contains(t, page, `<html lang="zh-CN">`)
	require.Contains(t, page, `<option value="" selected>`, "the profile shows Same as my browser")

	// The same account in an English browser reads English.
	c.HTTP.Transport = handlerstest.AcceptLanguage{Lang: "en", Next: c.HTTP.Transport.(handlerstest.AcceptLanguage).Next}
	_, page = c.Get("/settings/profile")
	require.Contains(t, page, `<html lang="en">`)
}

func TestSignUpBadInput(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c := b.Client(t)
	tests := []struct {
		name  string
		form  url.Values
		field string
		msg   string
	}{
		{"bad email", url.Values{"email": {"not-an-email"}, "name": {"A"}, "password": {"long enough password"}}, "email", "Enter a valid email address"},
		{"no name", url.Values{"email": {"a@example.com"}, "name": {"  "}, "password": {"long enough password"}}, "name", "Enter your name."},
		{"short password", url.Values{"email": {"a@example.com"}, "name": {"A"}, "password": {"short"}}, "password", "Use at least 12 characters."},
	}
	for _, tt := range tests {
		resp := c.Post("/signup", "/signup", tt.form)
		body := handlerstest.ReadBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tt.name)
		require.Contains(t, body, `data-testid="error-`+tt.field+`">`+tt.msg, tt.name)
		if tt.field != "email" {
			require.Contains(t, body, `value="`+tt.form.Get("email")+`"`, "%s: the email typed is kept", tt.name)
		}
		require.NotContains(t, body, "long enough password", "%s: a password is never echoed", tt.name)
	}
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM users").Scan(&n))
	require.Zero(t, n, "nothing is written for a bad form")
}

func TestVerificationCodes(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()

	t.Run("unverified account cannot sign in", func(t *testing.T) {
		c := b.Client(t)
		email := handlerstest.UniqueEmail("unverified")
		handlerstest.SignUp(t, c, email, "U", "unverified password")
		resp := c.Post("/login", "/login", url.Values{"email": {email}, "password": {"unverified password"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/signup/verify?email="+url.QueryEscape(email), resp.Header.Get("Location"))
		code, body := c.Get("/")
		require.Equal(t, http.StatusOK, code)
		require.NotContains(t, body, "dashboard-greeting")
	})

	t.Run("five wrong codes use the code up", func(t *testing.T) {
		c := b.Client(t)
		email := handlerstest.UniqueEmail("attempts")
		handlerstest.SignUp(t, c, email, "A", "attempts password")
		right := handlerstest.CodeFrom(t, b.WaitMessages(t, email, 1)[0])
		wrong := "000000"
		if right == wrong {
			wrong = "111111"
		}
		page := "/signup/verify?email=" + url.QueryEscape(email)
		for i := 1; i <= 5; i++ {
			resp := c.Post(page, "/signup/verify", url.Values{"email": {email}, "code": {wrong}})
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			if i < 5 {
				require.Contains(t, handlerstest.ReadBody(t, resp), "That code is not right.")
			} else {
				require.Contains(t, handlerstest.ReadBody(t, resp), "Too many wrong codes.")
			}
		}
		resp := c.Post(page, "/signup/verify", url.Values{"email": {email}, "code": {right}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), "Too many wrong codes.")
	})

	t.Run("expired code", func(t *testing.T) {
		c := b.Client(t)
		email := handlerstest.UniqueEmail("expired")
		handlerstest.SignUp(t, c, email, "E", "expired password")
		code := handlerstest.CodeFrom(t, b.WaitMessages(t, email, 1)[0])
		_, err := b.Pool.Exec(ctx, "UPDATE email_codes SET expires_at = now() - interval '1 second' WHERE user_id = (SELECT id FROM users WHERE email = $1)", email)
		require.NoError(t, err)
		resp := c.Post("/signup/verify?email="+url.QueryEscape(email), "/signup/verify", url.Values{"email": {email}, "code": {code}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), "That code has expired.")
	})

	t.Run("resend at most once a minute", func(t *testing.T) {
		c := b.Client(t)
		email := handlerstest.UniqueEmail("resend")
		handlerstest.SignUp(t, c, email, "R", "resend password1")
		first := handlerstest.CodeFrom(t, b.WaitMessages(t, email, 1)[0])
		page := "/signup/verify?email=" + url.QueryEscape(email)
		resp := c.Post(page, "/signup/resend", url.Values{"email": {email}})
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), "less than a minute ago")

		_, err := b.Pool.Exec(ctx, "UPDATE email_codes SET created_at = now() - interval '61 seconds' WHERE user_id = (SELECT id FROM users WHERE email = $1)", email)
		require.NoError(t, err)
		resp = c.Post(page, "/signup/resend", url.Values{"email": {email}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		second := handlerstest.CodeFrom(t, b.WaitMessages(t, email, 2)[1])

		// Only the newest code works.
		if first != second {
			resp = c.Post(page, "/signup/verify", url.Values{"email": {email}, "code": {first}})
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		}
		resp = c.Post(page, "/signup/verify", url.Values{"email": {email}, "code": {second}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	})
}

// TestMessagesDoNotRevealAccounts checks that sign-up, sign-in and reset
// answer the same whether or not an email is registered.
func TestMessagesDoNotRevealAccounts(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, email := b.SignedUpUser(t, "known")
	unknown := handlerstest.UniqueEmail("unknown")

	c := b.Client(t)
	handlerstest.SignUp(t, c, email, "Someone", "another password")
	handlerstest.SignUp(t, c, unknown, "Someone", "another password")
	// The account's owner is told, instead of getting a code.
	msgs := b.WaitMessages(t, email, 3) // code, sign-in notice, this
	handlerstest.WithSubject(t, msgs, "Someone tried to sign up with your email")

	for _, e := range []string{email, unknown + ".invalid-tld-not-registered"} {
		resp := c.Post("/login", "/login", url.Values{"email": {e}, "password": {"not the password"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Contains(t, handlerstest.ReadBody(t, resp), "The email or password is wrong.")
	}

	for _, e := range []string{email, handlerstest.UniqueEmail("nobody")} {
		resp := c.Post("/password/reset", "/password/reset", url.Values{"email": {e}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/password/reset/confirm?email="+url.QueryEscape(e), resp.Header.Get("Location"))
	}
}

// TestPasswordResetEndsOtherSessions: a reset ends every session and
// revokes the API keys.
func TestPasswordResetEndsOtherSessions(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	first, email := b.SignedUpUser(t, "reset")
	code, body := first.Get("/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "dashboard-greeting")
	key := first.CreateKey("before the reset")

	other := b.Client(t)
	resp := other.Post("/password/reset", "/password/reset", url.Values{"email": {email}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	msgs := b.WaitMessages(t, email, 3) // code, new sign-in notice, reset
	var resetCode string
	for _, m := range msgs {
		if strings.HasPrefix(m.Subject, "Reset your KubeBYON password") {
			resetCode = handlerstest.CodeFrom(t, m)
		}
	}
	require.NotEmpty(t, resetCode)

	page := "/password/reset/confirm?email=" + url.QueryEscape(email)
	resp = other.Post(page, "/password/reset/confirm", url.Values{"email": {email}, "code": {resetCode}, "password": {"short"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "Use at least 12 characters.")

	resp = other.Post(page, "/password/reset/confirm", url.Values{"email": {email}, "code": {resetCode}, "password": {"a brand new password"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/login", resp.Header.Get("Location"))

	// The code is single-use.
	resp = other.Post(page, "/password/reset/confirm", url.Values{"email": {email}, "code": {resetCode}, "password": {"yet another password"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)

	// The first browser was signed out, and the API keys made with the old
	// password were revoked.
	_, body = first.Get("/")
	require.NotContains(t, body, "dashboard-greeting")
	require.Equal(t, http.StatusUnauthorized, b.APICall(t, http.MethodGet, "/api/v1/clusters", key, "").Status)

	resp = other.Post("/login", "/login", url.Values{"email": {email}, "password": {"password of reset"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp = other.Post("/login", "/login", url.Values{"email": {email}, "password": {"a brand new password"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}

func TestSignInRateLimit(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, email := b.SignedUpUser(t, "limited")
	c := b.Client(t)
	for i := 0; i < 10; i++ {
		resp := c.Post("/login", "/login", url.Values{"email": {email}, "password": {"wrong password"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "attempt %d", i+1)
	}
	// Even the right password is refused now, for this account.
	resp := c.Post("/login", "/login", url.Values{"email": {email}, "password": {"password of limited"}})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Contains(t, handlerstest.ReadBody(t, resp), "Too many attempts. Try again in")
}

// TestSignInLockoutSparesKnownBrowsers: wrong passwords from one client
// lock the account out of browsers it never signed in from, but a browser
// holding the device cookie of an earlier sign-in still signs in.
func TestSignInLockoutSparesKnownBrowsers(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	owner, email := b.SignedUpUser(t, "owner")
	// The owner's device cookie was issued for this account; another
	// account's gives no way around its lockout.
	other, _ := b.SignedUpUser(t, "other")
	for _, c := range []*handlerstest.Client{owner, other} {
		resp := c.Post("/", "/logout", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	}

	attacker := b.Client(t)
	for i := 0; i < 10; i++ {
		resp := attacker.Post("/login", "/login", url.Values{"email": {email}, "password": {"wrong password"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "attempt %d", i+1)
	}
	tests := []struct {
		name   string
		client *handlerstest.Client
		want   int
	}{
		{"the attacker", attacker, http.StatusTooManyRequests},
		{"a fresh browser", b.Client(t), http.StatusTooManyRequests},
		{"a browser known to another account", other, http.StatusTooManyRequests},
		{"the owner's browser", owner, http.StatusSeeOther},
	}
	for _, tt := range tests {
		resp := tt.client.Post("/login", "/login", url.Values{"email": {email}, "password": {"password of owner"}})
		require.Equal(t, tt.want, resp.StatusCode, tt.name)
	}
	require.True(t, owner.SignedIn())
}

func TestCSRFAndSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c := b.Client(t)
	c.CSRF("/login") // has a session with a CSRF token, but sends no token:
	resp, err := c.HTTP.PostForm(b.Server.URL+"/login", url.Values{"email": {"a@example.com"}, "password": {"x"}})
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "The form expired.")

	req, err := http.NewRequest(http.MethodPost, b.Server.URL+"/logout", nil)
	require.NoError(t, err)
	req.Header.Set("X-CSRF-Token", "forged")
	resp2, err := c.HTTP.Do(req)
	require.NoError(t, err)
	resp2.Body.Close()
	require.Equal(t, http.StatusForbidden, resp2.StatusCode)

	resp3, err := http.Get(b.Server.URL + "/")
	require.NoError(t, err)
	resp3.Body.Close()
	h := resp3.Header
	require.Contains(t, h.Get("Content-Security-Policy"), "script-src 'self'")
	require.Contains(t, h.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	require.NotContains(t, h.Get("Content-Security-Policy"), "unsafe-inline")
	require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	require.Equal(t, "strict-origin-when-cross-origin", h.Get("Referrer-Policy"))
	require.Empty(t, h.Get("Strict-Transport-Security"), "no HSTS on an http base URL")
}

// TestGivenPasswordMustChange: an admin made by `kubebyon admin create`
// with the password it printed signs in and is sent to the password form
// from every page (admin area included) until they set their own; then
// the pages open.
func TestGivenPasswordMustChange(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	const given = "printed-once-password-123"
	hash, err := passwords.Hash(given)
	require.NoError(t, err)
	_, err = (&adminusers.Service{Pool: b.Pool}).CreateAdmin(ctx, "first-admin@example.com", "First", hash, true)
	require.NoError(t, err)

	c := b.Client(t)
	resp := c.Post("/login", "/login", url.Values{"email": {"first-admin@example.com"}, "password": {given}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	for _, page := range []string{"/", "/clusters", "/admin/users", "/settings/api-keys"} {
		resp, err := c.HTTP.Get(c.Base + page)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
		require.Equal(t, "/settings/profile#password-section", resp.Header.Get("Location"), page)
	}
	code, body := c.Get("/settings/profile")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Set a password of your own first")

	resp = c.Post("/settings/profile", "/settings/password", url.Values{"current_password": {given}, "new_password": {"a password of my own choosing"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	code, _ = c.Get("/clusters")
	require.Equal(t, http.StatusOK, code, "the pages open once the password is the user's")
	code, _ = c.Get("/admin/users")
	require.Equal(t, http.StatusOK, code)
}
