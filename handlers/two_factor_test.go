package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

var (
	totpSecretField  = regexp.MustCompile(`id="two-factor-secret" type="text" value="([A-Z2-7]+)"`)
	recoveryCodeItem = regexp.MustCompile(`data-testid="recovery-code">([a-z2-7]{5}-[a-z2-7]{5})<`)
)

// totpCode is the app's code at now plus offset steps of 30 s: tests use
// increasing offsets, since a code's step is accepted once.
func totpCode(t *testing.T, secret string, offset int) string {
	t.Helper()
	code, err := totp.GenerateCode(secret, time.Now().Add(time.Duration(offset)*30*time.Second))
	require.NoError(t, err)
	return code
}

// wrongCode is a six-digit code that is not the one of now.
func wrongCode(t *testing.T, secret string) string {
	n, err := strconv.Atoi(totpCode(t, secret, 0))
	require.NoError(t, err)
	return fmt.Sprintf("%06d", (n+500000)%1000000)
}

// enrolTwoFactor turns two-factor on for c's user and returns the secret
// and the recovery codes.
func enrolTwoFactor(t *testing.T, c *handlerstest.Client) (string, []string) {
	t.Helper()
	status, page := c.Get("/settings/security/two-factor")
	require.Equal(t, http.StatusOK, status, page)
	m := totpSecretField.FindStringSubmatch(page)
	require.NotNil(t, m, page)
	secret := m[1]
	require.Contains(t, page, `src="data:image/png;base64,`, "the QR code")

	resp := c.Post("/settings/security/two-factor", "/settings/security/two-factor", url.Values{"code": {totpCode(t, secret, -1)}})
	page = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	var codes []string
	for _, m := range recoveryCodeItem.FindAllStringSubmatch(page, -1) {
		codes = append(codes, m[1])
	}
	require.Len(t, codes, 10, page)
	return secret, codes
}

// postTwoFactor answers the sign-in's second step.
func postTwoFactor(c *handlerstest.Client, code string) *http.Response {
	return c.Post("/sign-in/two-factor", "/sign-in/two-factor", url.Values{"code": {code}})
}

// TestTwoFactorEnrolAndSignIn: the secret counts only once a right code
// confirms it; the recovery codes are shown once; a password sign-in then
// waits for the second factor, which refuses a wrong or replayed code and
// takes a recovery code once; new recovery codes replace the old ones;
// turning it off needs the password or a code.
func TestTwoFactorEnrolAndSignIn(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "totp")
	password := "password of totp"
	id := b.UserID(t, email)

	_, page := c.Get("/settings/security")
	require.Contains(t, page, `data-testid="two-factor-setup"`)
	_, page = c.Get("/settings/sign-in")
	require.Contains(t, page, `href="/settings/security"`, "the settings navigation links the page")

	// A wrong code does not turn it on.
	status, page := c.Get("/settings/security/two-factor")
	require.Equal(t, http.StatusOK, status)
	secret := totpSecretField.FindStringSubmatch(page)[1]
	resp := c.Post("/settings/security/two-factor", "/settings/security/two-factor", url.Values{"code": {wrongCode(t, secret)}})
	page = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, page, `data-testid="error-code"`)
	require.Contains(t, page, secret, "the same secret, to try again")
	_, page = c.Get("/settings/security")
	require.Contains(t, page, `data-testid="two-factor-setup"`, "still off")

	got, codes := enrolTwoFactor(t, c)
	require.Equal(t, secret, got, "the enrolment begun is the one confirmed")
	require.Contains(t, b.Audits(t, id), "user.two_factor_enable")
	_, page = c.Get("/settings/security")
	require.Contains(t, page, `data-testid="recovery-codes-left">10<`)
	for _, code := range codes {
		require.NotContains(t, page, code, "the codes are shown once")
	}
	require.True(t, c.SignedIn(), "this browser stays signed in")

	// A password sign-in stops at the second factor, not signed in.
	c2 := b.Client(t)
	resp = c2.Post("/login", "/login", url.Values{"email": {email}, "password": {password}, "next": {"/settings/sign-in"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/sign-in/two-factor", resp.Header.Get("Location"))
	require.False(t, c2.SignedIn())
	status, page = c2.Get("/sign-in/two-factor")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `data-testid="two-factor-form"`)

	resp = postTwoFactor(c2, wrongCode(t, secret))
	page = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, page, `data-testid="error-code"`)
	require.False(t, c2.SignedIn())

	code := totpCode(t, secret, 0)
	resp = postTwoFactor(c2, code)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, "/settings/sign-in", resp.Header.Get("Location"), "on to where the sign-in was going")
	require.True(t, c2.SignedIn())

	// The same code again, in another browser: refused.
	c3 := b.SignIn(t, email, password)
	resp = postTwoFactor(c3, code)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "a code is accepted once")
	require.False(t, c3.SignedIn())

	// A recovery code signs in once.
	resp = postTwoFactor(c3, strings.ToUpper(codes[0]))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.True(t, c3.SignedIn())
	require.Contains(t, b.Audits(t, id), "user.two_factor_recovery_used")
	c4 := b.SignIn(t, email, password)
	resp = postTwoFactor(c4, codes[0])
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "a recovery code is used once")
	require.False(t, c4.SignedIn())
	_, page = c.Get("/settings/security")
	require.Contains(t, page, `data-testid="recovery-codes-left">9<`)

	// New recovery codes need a current code, and replace the old ones.
	resp = c.Post("/settings/security", "/settings/security/recovery-codes", url.Values{"regenerateCode": {wrongCode(t, secret)}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	resp = c.Post("/settings/security", "/settings/security/recovery-codes", url.Values{"regenerateCode": {totpCode(t, secret, 1)}})
	page = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	fresh := recoveryCodeItem.FindAllStringSubmatch(page, -1)
	require.Len(t, fresh, 10)
	resp = postTwoFactor(c4, codes[1])
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "the old codes no longer work")
	resp = postTwoFactor(c4, fresh[0][1])
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.True(t, c4.SignedIn())

	// Off: a wrong password is refused, the right one turns it off.
	resp = c.Post("/settings/security", "/settings/security/two-factor/disable", url.Values{"disablePassword": {"not it"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	resp = c.Post("/settings/security", "/settings/security/two-factor/disable", url.Values{"disablePassword": {password}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Contains(t, b.Audits(t, id), "user.two_factor_disable")
	c5 := b.SignIn(t, email, password)
	require.True(t, c5.SignedIn(), "the password alone signs in again")
}

// TestTwoFactorPendingSignIn: the second step is nothing without a first,
// and another user cannot touch someone's two-factor from their session.
func TestTwoFactorPendingSignIn(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	owner, email := b.SignedUpUser(t, "owner2fa")
	secret, _ := enrolTwoFactor(t, owner)

	visitor := b.Client(t)
	status, _ := visitor.Get("/sign-in/two-factor")
	require.Equal(t, http.StatusSeeOther, status, "no pending sign-in: back to sign in")
	resp := visitor.Post("/login", "/sign-in/two-factor", url.Values{"code": {totpCode(t, secret, 0)}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/login", resp.Header.Get("Location"))
	require.False(t, visitor.SignedIn())

	// A stranger's requests act on the stranger's account only.
	stranger, _ := b.SignedUpUser(t, "stranger2fa")
	resp = stranger.Post("/settings/security", "/settings/security/two-factor/disable", url.Values{"disableCode": {totpCode(t, secret, 1)}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page := stranger.Get("/settings/security")
	require.Contains(t, page, `data-testid="two-factor-setup"`)
	c := b.SignIn(t, email, "password of owner2fa")
	require.False(t, c.SignedIn(), "the owner's two-factor is still on")
}

// TestTwoFactorOAuth: a sign-in with a provider waits for the second
// factor too; an account without a password turns it off with a code.
func TestTwoFactorOAuth(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupOAuth(t)
	email := handlerstest.UniqueEmail("octo2fa")
	b.GitHub.SignIn(handlerstest.Person{ID: "5151", Login: "octo2fa", Name: "Octo", Email: email, Verified: true})
	c := b.Client(t)
	require.Equal(t, "/", c.SignInWith("github"))
	secret, _ := enrolTwoFactor(t, c)

	c2 := b.Client(t)
	require.Equal(t, "/sign-in/two-factor", c2.SignInWith("github"))
	require.False(t, c2.SignedIn())
	resp := postTwoFactor(c2, totpCode(t, secret, 0))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, "/", resp.Header.Get("Location"))
	require.True(t, c2.SignedIn())

	_, page := c.Get("/settings/security")
	require.NotContains(t, page, `name="disablePassword"`, "no password to confirm with")
	resp = c.Post("/settings/security", "/settings/security/two-factor/disable", url.Values{"disableCode": {totpCode(t, secret, 1)}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, "/", b.Client(t).SignInWith("github"))
}

// TestTwoFactorRequired: an admin requires two-factor of everyone (with
// their password); a user without it is sent to set it up from every
// page, and let in once they have; API keys go on working.
func TestTwoFactorRequired(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "admin2fa")
	user, _ := b.SignedUpUser(t, "user2fa")
	key := user.CreateKey("ci")

	resp := admin.Post("/admin/settings/sign-in", "/admin/settings/two-factor", url.Values{"require": {"admins"}, "password": {"wrong"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-two-factor-password"`)
	status, _ := admin.Get("/admin")
	require.Equal(t, http.StatusOK, status, "nothing was saved")

	// Admins only: the admin is sent to set it up, the user is not.
	resp = admin.Post("/admin/settings/sign-in", "/admin/settings/two-factor", url.Values{"require": {"admins"}, "password": {"password of admin2fa"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Len(t, b.AuditEvents(t, "admin.settings_two_factor"), 1)
	resp, _ = admin.FetchURL(admin.Base + "/admin/users")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/settings/security/two-factor", resp.Header.Get("Location"))
	status, _ = user.Get("/clusters")
	require.Equal(t, http.StatusOK, status)
	adminSecret, _ := enrolTwoFactor(t, admin)

	// Everyone.
	resp = admin.Post("/admin/settings/sign-in", "/admin/settings/two-factor", url.Values{"require": {"all"}, "password": {"password of admin2fa"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	status, _ = admin.Get("/admin/settings/sign-in")
	require.Equal(t, http.StatusOK, status, "the admin has two-factor")
	for _, path := range []string{"/", "/clusters", "/settings/profile"} {
		resp, _ := user.FetchURL(user.Base + path)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, path)
		require.Equal(t, "/settings/security/two-factor", resp.Header.Get("Location"), path)
	}
	status, page := user.Get("/settings/security/two-factor")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `data-testid="two-factor-required"`, "the page says why")

	// API keys are not affected.
	r, _ := user.Fetch("/api/v1/me", http.Header{"Authorization": {"Bearer " + key}})
	require.Equal(t, http.StatusOK, r.StatusCode)

	enrolTwoFactor(t, user)
	status, _ = user.Get("/clusters")
	require.Equal(t, http.StatusOK, status, "let in once set up")
	_ = adminSecret
}

// TestTwoFactorAdminReset: an admin turns a user's two-factor off with
// their password; the user signs in with the password alone again. No
// one else may.
func TestTwoFactorAdminReset(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "resetter")
	user, email := b.SignedUpUser(t, "lostphone")
	enrolTwoFactor(t, user)
	id := b.UserID(t, email)
	page := fmt.Sprintf("/admin/users/%d", id)
	path := page + "/two-factor-reset"

	_, body := admin.Get(page)
	require.Contains(t, body, `data-testid="admin-form-two-factor-reset"`)

	other, _ := b.SignedUpUser(t, "notadmin")
	resp := other.Post("/settings/profile", path, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp = admin.Post(page, path, url.Values{"password": {"wrong"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.False(t, b.SignIn(t, email, "password of lostphone").SignedIn(), "still on")

	resp = admin.Post(page, path, url.Values{"password": {"password of resetter"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Len(t, b.AuditEvents(t, "admin.user_two_factor_reset"), 1)
	require.True(t, b.SignIn(t, email, "password of lostphone").SignedIn())
	_, body = admin.Get(page)
	require.NotContains(t, body, `data-testid="admin-form-two-factor-reset"`)
}

// TestAPIAdminTwoFactor: the requirement and the reset with an admin key,
// which goes on working whatever the requirement.
func TestAPIAdminTwoFactor(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	a := newAdminAPI(t, b, "apitwofactor")
	type twoFactor struct {
		Require string `json:"require"`
	}
	require.Equal(t, twoFactor{Require: "off"}, get[twoFactor](t, a, "/settings/two-factor"))
	a.requireInvalid(t, http.MethodPatch, "/settings/two-factor", `{"require": "some"}`, "require")
	require.Equal(t, twoFactor{Require: "admins"}, patchAs[twoFactor](t, a, "/settings/two-factor", `{"require": "admins"}`))
	require.Equal(t, twoFactor{Require: "admins"}, get[twoFactor](t, a, "/settings/two-factor"), "the key is not asked for two-factor")
	require.Equal(t, 1, a.audited(t, "admin.settings_two_factor"))
	resp, _ := a.admin.FetchURL(a.admin.Base + "/admin")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the admin's console is")

	user, email := b.SignedUpUser(t, "apitwofactoruser")
	path := fmt.Sprintf("/users/%d/two-factor-reset", b.UserID(t, email))
	a.call(t, http.MethodPost, path, "", http.StatusConflict)
	enrolTwoFactor(t, user)
	a.call(t, http.MethodPost, path, "", http.StatusNoContent)
	require.Equal(t, 1, a.audited(t, "admin.user_two_factor_reset"))
	require.True(t, b.SignIn(t, email, "password of apitwofactoruser").SignedIn())
	a.call(t, http.MethodPost, "/users/999999/two-factor-reset", "", http.StatusNotFound)
}
