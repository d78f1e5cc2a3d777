package handlers

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
	"github.com/kubebyon/kubebyon/internal/signup"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// limit counts a hit against a rule. When over it, it renders page with a
// 429 and the form's error, and returns handled=true.
func (h *Handlers) limit(c echo.Context, rule ratelimit.Rule, subject string, f *views.Form, page func(views.Form) templ.Component) (bool, error) {
	d, err := h.limits.Hit(c.Request().Context(), rule, subject, time.Now())
	if err != nil {
		return true, err
	}
	if d.Allowed {
		return false, nil
	}
	waitForm(c, f, d.RetryAfter)
	return true, render(c, http.StatusTooManyRequests, page(*f))
}

// waitForm tells a form's user to come back after retryAfter: the
// Retry-After header and the form's message.
func waitForm(c echo.Context, f *views.Form, retryAfter time.Duration) {
	c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retryAfter.Seconds()))))
	f.Error, f.ErrorData = "ErrRateLimited", map[string]any{"Minutes": int(math.Ceil(retryAfter.Minutes()))}
}

// showSignUpPage is the registration form when sign-up is open, else a
// page that says it is not; with an invitation's token (?invite=), the
// form for the invited address whatever the policy.
func (h *Handlers) showSignUpPage(c echo.Context) error {
	if _, ok := currentUser(c); ok {
		return redirect(c, "/")
	}
	if token := c.QueryParam("invite"); token != "" {
		return h.showInvitedSignUpPage(c, token)
	}
	if next := c.QueryParam("next"); next != "" {
		// Where the visitor was going (an organization's invitation):
		// there once the code proves the address (verifySignup).
		h.sessions.Put(c.Request().Context(), sessionSignUpNext, safeNext(next))
	}
	st, err := h.Accounts.SignUpSettings(c.Request().Context())
	if err != nil {
		return err
	}
	if st.Policy != signup.PolicyOpen {
		return render(c, http.StatusOK, views.SignUpClosedPage(st.Policy))
	}
	return render(c, http.StatusOK, views.SignUpPage(views.NewForm(), st.AllowedDomains))
}

func (h *Handlers) signUp(c echo.Context) error {
	if c.FormValue("invite") != "" {
		return h.signUpInvited(c)
	}
	ctx := c.Request().Context()
	st, err := h.Accounts.SignUpSettings(ctx)
	if err != nil {
		return err
	}
	if st.Policy != signup.PolicyOpen {
		return render(c, http.StatusForbidden, views.SignUpClosedPage(st.Policy))
	}
	f := formFrom(c, "email", "name")
	page := func(f views.Form) templ.Component { return views.SignUpPage(f, st.AllowedDomains) }
	if done, err := h.limit(c, ratelimit.SignUpPerIP, c.RealIP(), &f, page); done {
		return err
	}
	in := accounts.SignUpInput{
		Email: c.FormValue("email"), Name: c.FormValue("name"), Password: c.FormValue("password"),
		MailLanguage: locale.Lang(ctx),
	}
	err = h.Accounts.SignUp(ctx, in, actor(c))
	switch {
	case errors.Is(err, signup.ErrClosed):
		return render(c, http.StatusForbidden, views.SignUpClosedPage(signup.PolicyClosed))
	case errors.Is(err, signup.ErrInviteOnly):
		return render(c, http.StatusForbidden, views.SignUpClosedPage(signup.PolicyInviteOnly))
	case err != nil:
		if applyError(&f, err) {
			return render(c, http.StatusUnprocessableEntity, page(f))
		}
		return err
	}
	email, _ := input.Email(in.Email)
	return redirect(c, "/signup/verify?email="+url.QueryEscape(email))
}

// showInvitedSignUpPage is the registration form of an invitation's link:
// the address is the invitation's, not to be changed.
func (h *Handlers) showInvitedSignUpPage(c echo.Context, token string) error {
	inv, err := h.Accounts.Invitation(c.Request().Context(), token)
	if err != nil {
		return h.renderInvitationUnusable(c, err)
	}
	return render(c, http.StatusOK, views.InvitedSignUpPage(views.NewForm(), token, inv.Email))
}

// signUpInvited makes the invited account, signs it in and goes home.
func (h *Handlers) signUpInvited(c echo.Context) error {
	ctx := c.Request().Context()
	token := c.FormValue("invite")
	inv, err := h.Accounts.Invitation(ctx, token)
	if err != nil {
		return h.renderInvitationUnusable(c, err)
	}
	f := formFrom(c, "name")
	page := func(f views.Form) templ.Component { return views.InvitedSignUpPage(f, token, inv.Email) }
	if done, err := h.limit(c, ratelimit.SignUpPerIP, c.RealIP(), &f, page); done {
		return err
	}
	u, err := h.Accounts.SignUpInvited(ctx, accounts.InvitedSignUpInput{
		Token: token, Name: c.FormValue("name"), Password: c.FormValue("password"),
	}, actor(c))
	switch {
	case errors.Is(err, accounts.ErrInvitationAccountExists):
		f.Error = err.Error()
		return render(c, http.StatusUnprocessableEntity, page(f))
	case invitationUnusable(err):
		return h.renderInvitationUnusable(c, err)
	case err != nil:
		if applyError(&f, err) {
			return render(c, http.StatusUnprocessableEntity, page(f))
		}
		return err
	}
	to, err := h.signInAs(c, u, "invitation", "/")
	if err != nil {
		return err
	}
	h.flash(c, "FlashWelcome")
	return redirect(c, to)
}

// invitationUnusable reports whether err says why an invitation's link
// does not work.
func invitationUnusable(err error) bool {
	for _, e := range []error{signup.ErrInvitationUnknown, signup.ErrInvitationExpired, signup.ErrInvitationRevoked, signup.ErrInvitationAccepted} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// renderInvitationUnusable says why an invitation's link does not work:
// 404 for a link that never was, 410 for one that no longer is.
func (h *Handlers) renderInvitationUnusable(c echo.Context, err error) error {
	if !invitationUnusable(err) {
		return err
	}
	status := http.StatusGone
	if errors.Is(err, signup.ErrInvitationUnknown) {
		status = http.StatusNotFound
	}
	return render(c, status, views.InvitationUnusablePage(err.Error()))
}

func (h *Handlers) showVerifyPage(c echo.Context) error {
	email, ok := input.Email(c.QueryParam("email"))
	if !ok {
		return redirect(c, "/signup")
	}
	return render(c, http.StatusOK, views.VerifyPage(views.NewForm(), email))
}

func (h *Handlers) verifySignup(c echo.Context) error {
	f := formFrom(c, "code")
	email, ok := input.Email(c.FormValue("email"))
	if !ok {
		return redirect(c, "/signup")
	}
	page := func(f views.Form) templ.Component { return views.VerifyPage(f, email) }
	if done, err := h.limit(c, ratelimit.VerifyPerIP, c.RealIP(), &f, page); done {
		return err
	}
	if _, ok := accounts.NormalizeCode(f.Value("code")); !ok {
		f.Errors["code"] = "ErrCodeFormat"
		return render(c, http.StatusUnprocessableEntity, page(f))
	}
	u, err := h.Accounts.VerifySignup(c.Request().Context(), email, f.Value("code"), actor(c))
	if err != nil {
		if applyError(&f, err) {
			return render(c, http.StatusUnprocessableEntity, page(f))
		}
		return err
	}
	to, err := h.signInAs(c, u, "email_code", safeNext(h.sessions.PopString(c.Request().Context(), sessionSignUpNext)))
	if err != nil {
		return err
	}
	h.flash(c, "FlashWelcome")
	return redirect(c, to)
}

// sessionSignUpNext is the session key of where a visitor who signs up
// was going (showSignUpPage's ?next=, the sign-in page's link passes
// it on).
const sessionSignUpNext = "signup_next"

func (h *Handlers) resendSignupCode(c echo.Context) error {
	email, ok := input.Email(c.FormValue("email"))
	if !ok {
		return redirect(c, "/signup")
	}
	f := views.NewForm()
	page := func(f views.Form) templ.Component { return views.VerifyPage(f, email) }
	if done, err := h.limit(c, ratelimit.VerifyPerIP, c.RealIP(), &f, page); done {
		return err
	}
	if err := h.Accounts.ResendSignupCode(c.Request().Context(), email, locale.Lang(c.Request().Context())); err != nil {
		if applyError(&f, err) {
			return render(c, http.StatusTooManyRequests, page(f))
		}
		return err
	}
	h.flash(c, "FlashCodeSent")
	return redirect(c, "/signup/verify?email="+url.QueryEscape(email))
}

func (h *Handlers) showLoginPage(c echo.Context) error {
	if _, ok := currentUser(c); ok {
		return redirect(c, safeNext(c.QueryParam("next")))
	}
	buttons, err := h.providerButtons(c.Request().Context())
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.LoginPage(views.NewForm(), safeNext(c.QueryParam("next")), buttons))
}

func (h *Handlers) signIn(c echo.Context) error {
	ctx := c.Request().Context()
	f := formFrom(c, "email")
	next := safeNext(c.FormValue("next"))
	buttons, err := h.providerButtons(ctx)
	if err != nil {
		return err
	}
	page := func(f views.Form) templ.Component { return views.LoginPage(f, next, buttons) }
	email := strings.ToLower(strings.TrimSpace(f.Value("email")))
	if done, err := h.limit(c, ratelimit.SignInPerIP, c.RealIP(), &f, page); done {
		return err
	}
	// A browser that signed in to this account before is limited on its
	// own, any other per account: wrong passwords from elsewhere lock the
	// account out of new browsers only.
	rule, subject := ratelimit.SignInPerAccount, email
	if ck, err := c.Cookie(h.cookieName(deviceCookie)); err == nil {
		if device, ok := h.Accounts.Device(ck.Value, email, time.Now()); ok {
			rule, subject = ratelimit.SignInPerDevice, device
		}
	}
	if done, err := h.limit(c, rule, subject, &f, page); done {
		return err
	}
	u, err := h.Accounts.Authenticate(ctx, f.Value("email"), c.FormValue("password"))
	if errors.Is(err, accounts.ErrUnverified) {
		if err := h.Accounts.ResendSignupCode(ctx, u.Email, locale.Lang(ctx)); err != nil && !errors.Is(err, accounts.ErrResendTooSoon) {
			return err
		}
		h.flash(c, "FlashVerifyFirst")
		return redirect(c, "/signup/verify?email="+url.QueryEscape(u.Email))
	}
	if err != nil {
		if applyError(&f, err) {
			return render(c, http.StatusUnauthorized, page(f))
		}
		return err
	}
	if err := h.limits.Reset(ctx, rule, subject); err != nil {
		return err
	}
	to, err := h.signInAs(c, u, "password", next)
	if err != nil {
		return err
	}
	return redirect(c, to)
}

// signInAs signs u in to this browser once a first factor (method) proved
// who they are, and returns where to go: next, or, when u has two-factor
// authentication, the page that asks for the second factor; the session
// then holds only the pending sign-in (two_factor_sign_in.go). Every
// sign-in (password, email code, invitation, provider) comes through here.
func (h *Handlers) signInAs(c echo.Context, u queries.User, method, next string) (string, error) {
	has, err := h.Accounts.HasTwoFactor(c.Request().Context(), u.ID)
	if err != nil {
		return "", err
	}
	if has {
		return twoFactorSignInPath, h.holdSignIn(c, u, method, next)
	}
	return next, h.startSession(c, u, method)
}

// startSession starts a session for u in this browser: a new session
// token (against fixation) bound to a new signed-in session row, and a
// device cookie that names the account.
func (h *Handlers) startSession(c echo.Context, u queries.User, method string) error {
	ctx := c.Request().Context()
	if err := h.renewSession(ctx); err != nil {
		return err
	}
	h.sessions.Remove(ctx, sessionTwoFactor)
	a := actor(c)
	sid, err := h.Accounts.StartSession(ctx, u, method, a)
	if err != nil {
		return err
	}
	h.sessions.Put(ctx, sessionID, sid)
	value, expires := h.Accounts.NewDevice(u.Email, time.Now())
	c.SetCookie(&http.Cookie{
		Name: h.cookieName(deviceCookie), Value: value, Path: "/", Expires: expires,
		MaxAge: int(accounts.DeviceLifetime.Seconds()), HttpOnly: true, Secure: h.https(), SameSite: http.SameSiteLaxMode,
	})
	return nil
}

// deviceCookie names the cookie by which a browser that signed in to an
// account is known to it (accounts.NewDevice).
const deviceCookie = "kubebyon_device"

func (h *Handlers) signOut(c echo.Context) error {
	ctx := c.Request().Context()
	if sid, ok := c.Get(ctxSessionID).(string); ok {
		if err := h.Accounts.EndSession(ctx, sid, actor(c)); err != nil {
			return err
		}
	}
	if err := h.sessions.Destroy(ctx); err != nil {
		return fmt.Errorf("destroy session: %w", err)
	}
	return redirect(c, "/")
}

func (h *Handlers) showResetRequestPage(c echo.Context) error {
	return render(c, http.StatusOK, views.ResetRequestPage(views.NewForm()))
}

func (h *Handlers) requestPasswordReset(c echo.Context) error {
	f := formFrom(c, "email")
	page := func(f views.Form) templ.Component { return views.ResetRequestPage(f) }
	email, ok := input.Email(f.Value("email"))
	if !ok {
		f.Errors["email"] = "ErrEmailInvalid"
		return render(c, http.StatusUnprocessableEntity, page(f))
	}
	if done, err := h.limit(c, ratelimit.ResetPerIP, c.RealIP(), &f, page); done {
		return err
	}
	if done, err := h.limit(c, ratelimit.ResetPerAccount, strings.ToLower(email), &f, page); done {
		return err
	}
	err := h.Accounts.RequestPasswordReset(c.Request().Context(), email, actor(c))
	// A second request within a minute keeps the first code; say the same
	// as always, so the page does not tell whether the address exists.
	if err != nil && !errors.Is(err, accounts.ErrResendTooSoon) {
		return err
	}
	return redirect(c, "/password/reset/confirm?email="+url.QueryEscape(email))
}

func (h *Handlers) showResetConfirmPage(c echo.Context) error {
	email, ok := input.Email(c.QueryParam("email"))
	if !ok {
		return redirect(c, "/password/reset")
	}
	f := views.NewForm()
	f.Values["email"] = email
	return render(c, http.StatusOK, views.ResetConfirmPage(f))
}

func (h *Handlers) resetPassword(c echo.Context) error {
	f := formFrom(c, "email", "code")
	page := func(f views.Form) templ.Component { return views.ResetConfirmPage(f) }
	if done, err := h.limit(c, ratelimit.VerifyPerIP, c.RealIP(), &f, page); done {
		return err
	}
	if _, ok := accounts.NormalizeCode(f.Value("code")); !ok {
		f.Errors["code"] = "ErrCodeFormat"
		return render(c, http.StatusUnprocessableEntity, page(f))
	}
	err := h.Accounts.ResetPassword(c.Request().Context(), f.Value("email"), f.Value("code"), c.FormValue("password"), actor(c))
	if err != nil {
		if applyError(&f, err) {
			return render(c, http.StatusUnprocessableEntity, page(f))
		}
		return err
	}
	// This browser's session, if any, ended with the others.
	if err := h.sessions.Destroy(c.Request().Context()); err != nil {
		return err
	}
	h.flash(c, "FlashPasswordReset")
	return redirect(c, "/login")
}

// applyError puts a domain error on the form: field errors next to their
// fields, known errors above the form. It reports false for other errors,
// which the caller returns as server errors.
func applyError(f *views.Form, err error) bool {
	var fe accounts.FieldErrors
	if errors.As(err, &fe) {
		for k, v := range fe {
			f.Errors[k] = v
		}
		return true
	}
	for _, known := range []error{
		accounts.ErrBadCredentials, accounts.ErrDisabled, accounts.ErrCodeInvalid,
		accounts.ErrCodeExpired, accounts.ErrTooManyAttempts, accounts.ErrResendTooSoon,
		signup.ErrClosed, signup.ErrInviteOnly, signup.ErrDomain,
	} {
		if errors.Is(err, known) {
			f.Error = known.Error()
			return true
		}
	}
	return false
}
