package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestSignUpAndSignInInBrowser is the first journey: sign up, get the code
// by email, verify, sign out, sign in with the password.
func TestSignUpAndSignInInBrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testenv.Browser(t)
	email := uniqueEmail("browser")

	var greeting string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.server.URL+"/"),
		chromedp.Click(`[data-testid="nav-signup"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="signup-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#name`, "Ada Lovelace", chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "analytical engine", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="signup-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="verify-form"]`, chromedp.ByQuery),
	))
	msgs := b.mail.WaitMessages(t, email, 1)
	require.Contains(t, msgs[0].Subject, "Your KubeBYON code")
	code := codeFrom(t, msgs[0])

	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#code`, code, chromedp.ByQuery),
		chromedp.Submit(`[data-testid="verify-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dashboard-greeting"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="dashboard-greeting"]`, &greeting, chromedp.ByQuery),
	))
	require.Equal(t, "Welcome, Ada Lovelace", greeting)

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`[data-testid="sign-out"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="nav-login"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="nav-login"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "wrong password!", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="form-error"]`, chromedp.ByQuery),
	))
	var formErr, typedEmail string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Text(`[data-testid="form-error"]`, &formErr, chromedp.ByQuery),
		chromedp.Value(`#email`, &typedEmail, chromedp.ByQuery),
	))
	require.Equal(t, "The email or password is wrong.", formErr)
	require.Equal(t, email, typedEmail, "the form keeps what the user typed")

	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#password`, "analytical engine", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dashboard-greeting"]`, chromedp.ByQuery),
	))

	// The new sign-ins were reported by email (security notices are on by default).
	msgs = b.mail.WaitMessages(t, email, 3)
	require.Equal(t, "New sign-in to your KubeBYON account", msgs[len(msgs)-1].Subject)
}

func signUp(t *testing.T, c *client, email, name, password string) {
	t.Helper()
	resp := c.post("/signup", "/signup", url.Values{"email": {email}, "name": {name}, "password": {password}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, "/signup/verify?email="+url.QueryEscape(email), resp.Header.Get("Location"))
}

// signedUpUser registers and verifies an account and returns its client,
// signed in.
func (b *testBundle) signedUpUser(t *testing.T, name string) (*client, string) {
	t.Helper()
	c := b.client(t)
	email := uniqueEmail(name)
	signUp(t, c, email, name, "password of "+name)
	code := codeFrom(t, b.mail.WaitMessages(t, email, 1)[0])
	resp := c.post("/signup/verify?email="+url.QueryEscape(email), "/signup/verify", url.Values{"email": {email}, "code": {code}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	return c, email
}

// acceptLanguage plays a browser set to a language.
type acceptLanguage struct {
	lang string
	next http.RoundTripper
}

func (a acceptLanguage) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept-Language", a.lang)
	return a.next.RoundTrip(r)
}

// TestSignUpFollowsTheBrowsersLanguage: a new account's language is "Same
// as my browser", while its code comes in the browser's language.
func TestSignUpFollowsTheBrowsersLanguage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.client(t)
	c.http.Transport = acceptLanguage{lang: "zh-CN,zh;q=0.9", next: c.http.Transport}
	email := uniqueEmail("browserlang")
	signUp(t, c, email, "Li", "password of li")
	msg := b.mail.WaitMessages(t, email, 1)[0]
	require.Contains(t, msg.Subject, "您的 KubeBYON 验证码", "the code comes in the browser's language")
	resp := c.post("/signup/verify?email="+url.QueryEscape(email), "/signup/verify", url.Values{"email": {email}, "code": {codeFrom(t, msg)}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))

	var lang string
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT language FROM users WHERE email = $1", email).Scan(&lang))
	require.Empty(t, lang, "the account follows the browser")
	_, page := c.get("/settings/profile")
	require.Contains(t, page, `<html lang="zh-CN">`)
	require.Contains(t, page, `<option value="" selected>`, "the profile shows Same as my browser")

	// The same account in an English browser reads English.
	c.http.Transport = acceptLanguage{lang: "en", next: c.http.Transport.(acceptLanguage).next}
	_, page = c.get("/settings/profile")
	require.Contains(t, page, `<html lang="en">`)
}

func TestSignUpBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.client(t)
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
		resp := c.post("/signup", "/signup", tt.form)
		body := readBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tt.name)
		require.Contains(t, body, `data-testid="error-`+tt.field+`">`+tt.msg, tt.name)
		if tt.field != "email" {
			require.Contains(t, body, `value="`+tt.form.Get("email")+`"`, "%s: the email typed is kept", tt.name)
		}
		require.NotContains(t, body, "long enough password", "%s: a password is never echoed", tt.name)
	}
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM users").Scan(&n))
	require.Zero(t, n, "nothing is written for a bad form")
}

func TestVerificationCodes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	t.Run("unverified account cannot sign in", func(t *testing.T) {
		c := b.client(t)
		email := uniqueEmail("unverified")
		signUp(t, c, email, "U", "unverified password")
		resp := c.post("/login", "/login", url.Values{"email": {email}, "password": {"unverified password"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/signup/verify?email="+url.QueryEscape(email), resp.Header.Get("Location"))
		code, body := c.get("/")
		require.Equal(t, http.StatusOK, code)
		require.NotContains(t, body, "dashboard-greeting")
	})

	t.Run("five wrong codes use the code up", func(t *testing.T) {
		c := b.client(t)
		email := uniqueEmail("attempts")
		signUp(t, c, email, "A", "attempts password")
		right := codeFrom(t, b.mail.WaitMessages(t, email, 1)[0])
		wrong := "000000"
		if right == wrong {
			wrong = "111111"
		}
		page := "/signup/verify?email=" + url.QueryEscape(email)
		for i := 1; i <= 5; i++ {
			resp := c.post(page, "/signup/verify", url.Values{"email": {email}, "code": {wrong}})
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			if i < 5 {
				require.Contains(t, readBody(t, resp), "That code is not right.")
			} else {
				require.Contains(t, readBody(t, resp), "Too many wrong codes.")
			}
		}
		resp := c.post(page, "/signup/verify", url.Values{"email": {email}, "code": {right}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, readBody(t, resp), "Too many wrong codes.")
	})

	t.Run("expired code", func(t *testing.T) {
		c := b.client(t)
		email := uniqueEmail("expired")
		signUp(t, c, email, "E", "expired password")
		code := codeFrom(t, b.mail.WaitMessages(t, email, 1)[0])
		_, err := b.pool.Exec(ctx, "UPDATE email_codes SET expires_at = now() - interval '1 second' WHERE user_id = (SELECT id FROM users WHERE email = $1)", email)
		require.NoError(t, err)
		resp := c.post("/signup/verify?email="+url.QueryEscape(email), "/signup/verify", url.Values{"email": {email}, "code": {code}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, readBody(t, resp), "That code has expired.")
	})

	t.Run("resend at most once a minute", func(t *testing.T) {
		c := b.client(t)
		email := uniqueEmail("resend")
		signUp(t, c, email, "R", "resend password1")
		first := codeFrom(t, b.mail.WaitMessages(t, email, 1)[0])
		page := "/signup/verify?email=" + url.QueryEscape(email)
		resp := c.post(page, "/signup/resend", url.Values{"email": {email}})
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Contains(t, readBody(t, resp), "less than a minute ago")

		_, err := b.pool.Exec(ctx, "UPDATE email_codes SET created_at = now() - interval '61 seconds' WHERE user_id = (SELECT id FROM users WHERE email = $1)", email)
		require.NoError(t, err)
		resp = c.post(page, "/signup/resend", url.Values{"email": {email}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		second := codeFrom(t, b.mail.WaitMessages(t, email, 2)[1])

		// Only the newest code works.
		if first != second {
			resp = c.post(page, "/signup/verify", url.Values{"email": {email}, "code": {first}})
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		}
		resp = c.post(page, "/signup/verify", url.Values{"email": {email}, "code": {second}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	})
}

// TestMessagesDoNotRevealAccounts checks that sign-up, sign-in and reset
// answer the same whether or not an email is registered.
func TestMessagesDoNotRevealAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, email := b.signedUpUser(t, "known")
	unknown := uniqueEmail("unknown")

	c := b.client(t)
	signUp(t, c, email, "Someone", "another password")
	signUp(t, c, unknown, "Someone", "another password")
	// The account's owner is told, instead of getting a code.
	msgs := b.mail.WaitMessages(t, email, 3) // code, sign-in notice, this
	withSubject(t, msgs, "Someone tried to sign up with your email")

	for _, e := range []string{email, unknown + ".invalid-tld-not-registered"} {
		resp := c.post("/login", "/login", url.Values{"email": {e}, "password": {"not the password"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Contains(t, readBody(t, resp), "The email or password is wrong.")
	}

	for _, e := range []string{email, uniqueEmail("nobody")} {
		resp := c.post("/password/reset", "/password/reset", url.Values{"email": {e}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/password/reset/confirm?email="+url.QueryEscape(e), resp.Header.Get("Location"))
	}
}

// TestPasswordResetEndsOtherSessions: a reset ends every session and
// revokes the API keys.
func TestPasswordResetEndsOtherSessions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, email := b.signedUpUser(t, "reset")
	code, body := first.get("/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "dashboard-greeting")
	key := first.createKey("before the reset")

	other := b.client(t)
	resp := other.post("/password/reset", "/password/reset", url.Values{"email": {email}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	msgs := b.mail.WaitMessages(t, email, 3) // code, new sign-in notice, reset
	var resetCode string
	for _, m := range msgs {
		if strings.HasPrefix(m.Subject, "Reset your KubeBYON password") {
			resetCode = codeFrom(t, m)
		}
	}
	require.NotEmpty(t, resetCode)

	page := "/password/reset/confirm?email=" + url.QueryEscape(email)
	resp = other.post(page, "/password/reset/confirm", url.Values{"email": {email}, "code": {resetCode}, "password": {"short"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), "Use at least 12 characters.")

	resp = other.post(page, "/password/reset/confirm", url.Values{"email": {email}, "code": {resetCode}, "password": {"a brand new password"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/login", resp.Header.Get("Location"))

	// The code is single-use.
	resp = other.post(page, "/password/reset/confirm", url.Values{"email": {email}, "code": {resetCode}, "password": {"yet another password"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)

	// The first browser was signed out, and the API keys made with the old
	// password were revoked.
	_, body = first.get("/")
	require.NotContains(t, body, "dashboard-greeting")
	require.Equal(t, http.StatusUnauthorized, b.apiCall(t, http.MethodGet, "/api/v1/clusters", key, "").status)

	resp = other.post("/login", "/login", url.Values{"email": {email}, "password": {"password of reset"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp = other.post("/login", "/login", url.Values{"email": {email}, "password": {"a brand new password"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}

func TestSignInRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, email := b.signedUpUser(t, "limited")
	c := b.client(t)
	for i := 0; i < 10; i++ {
		resp := c.post("/login", "/login", url.Values{"email": {email}, "password": {"wrong password"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "attempt %d", i+1)
	}
	// Even the right password is refused now, for this account.
	resp := c.post("/login", "/login", url.Values{"email": {email}, "password": {"password of limited"}})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Contains(t, readBody(t, resp), "Too many attempts. Try again in")
}

// TestSignInLockoutSparesKnownBrowsers: wrong passwords from one client
// lock the account out of browsers it never signed in from, but a browser
// holding the device cookie of an earlier sign-in still signs in.
func TestSignInLockoutSparesKnownBrowsers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner, email := b.signedUpUser(t, "owner")
	// The owner's device cookie was issued for this account; another
	// account's gives no way around its lockout.
	other, _ := b.signedUpUser(t, "other")
	for _, c := range []*client{owner, other} {
		resp := c.post("/", "/logout", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	}

	attacker := b.client(t)
	for i := 0; i < 10; i++ {
		resp := attacker.post("/login", "/login", url.Values{"email": {email}, "password": {"wrong password"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "attempt %d", i+1)
	}
	tests := []struct {
		name   string
		client *client
		want   int
	}{
		{"the attacker", attacker, http.StatusTooManyRequests},
		{"a fresh browser", b.client(t), http.StatusTooManyRequests},
		{"a browser known to another account", other, http.StatusTooManyRequests},
		{"the owner's browser", owner, http.StatusSeeOther},
	}
	for _, tt := range tests {
		resp := tt.client.post("/login", "/login", url.Values{"email": {email}, "password": {"password of owner"}})
		require.Equal(t, tt.want, resp.StatusCode, tt.name)
	}
	require.True(t, owner.signedIn())
}

func TestCSRFAndSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.client(t)
	c.csrf("/login") // has a session with a CSRF token, but sends no token:
	resp, err := c.http.PostForm(b.server.URL+"/login", url.Values{"email": {"a@example.com"}, "password": {"x"}})
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, readBody(t, resp), "The form expired.")

	req, err := http.NewRequest(http.MethodPost, b.server.URL+"/logout", nil)
	require.NoError(t, err)
	req.Header.Set("X-CSRF-Token", "forged")
	resp2, err := c.http.Do(req)
	require.NoError(t, err)
	resp2.Body.Close()
	require.Equal(t, http.StatusForbidden, resp2.StatusCode)

	resp3, err := http.Get(b.server.URL + "/")
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
	b := setup(t)
	ctx := context.Background()
	const given = "printed-once-password-123"
	hash, err := passwords.Hash(given)
	require.NoError(t, err)
	_, err = (&adminusers.Service{Pool: b.pool}).CreateAdmin(ctx, "first-admin@example.com", "First", hash, true)
	require.NoError(t, err)

	c := b.client(t)
	resp := c.post("/login", "/login", url.Values{"email": {"first-admin@example.com"}, "password": {given}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	for _, page := range []string{"/", "/clusters", "/admin/users", "/settings/api-keys"} {
		resp, err := c.http.Get(c.base + page)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, page)
		require.Equal(t, "/settings/profile#password-section", resp.Header.Get("Location"), page)
	}
	code, body := c.get("/settings/profile")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Set a password of your own first")

	resp = c.post("/settings/profile", "/settings/password", url.Values{"current_password": {given}, "new_password": {"a password of my own choosing"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	code, _ = c.get("/clusters")
	require.Equal(t, http.StatusOK, code, "the pages open once the password is the user's")
	code, _ = c.get("/admin/users")
	require.Equal(t, http.StatusOK, code)
}
