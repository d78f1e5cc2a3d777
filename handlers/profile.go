package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// Limits on the settings forms, per user: they guard against guessing the
// current password from a stolen session, against mail floods, and against
// filling the audit log (every save is an event).
var (
	passwordChangePerUser = ratelimit.Rule{Name: "password-change-user", Limit: 10, Window: 15 * time.Minute}
	emailChangePerUser    = ratelimit.Rule{Name: "email-change-user", Limit: 10, Window: time.Hour}
	avatarUploadPerUser   = ratelimit.Rule{Name: "avatar-upload-user", Limit: 30, Window: time.Hour}
	profileSavePerUser    = ratelimit.Rule{Name: "profile-save-user", Limit: 30, Window: time.Hour}
)

// profileSettings is the profile page for u with fresh forms.
func (h *Handlers) profileSettings(c echo.Context, u queries.User) (views.ProfileSettings, error) {
	ctx := c.Request().Context()
	p := views.ProfileSettings{
		Avatar: views.NewForm(), Profile: views.NewForm(), Email: views.NewForm(),
		Code: views.NewForm(), Password: views.NewForm(),
		CurrentEmail: u.Email, HasPassword: u.PasswordHash.Valid,
	}
	p.Profile.Values["name"] = u.Name
	p.Profile.Values["language"] = u.Language
	var err error
	if p.PendingEmail, err = h.Accounts.PendingEmailChange(ctx, u.ID); err != nil {
		return p, err
	}
	if p.AvatarURL, p.HasAvatar, err = h.avatarURL(ctx, u); err != nil {
		return p, err
	}
	return p, nil
}

// profilePage returns the profile page with one of its forms, chosen by
// slot, replaced by the form given; the handlers re-render failed forms
// with it.
func (h *Handlers) profilePage(c echo.Context, u queries.User, slot func(*views.ProfileSettings) *views.Form) (func(views.Form) templ.Component, error) {
	p, err := h.profileSettings(c, u)
	if err != nil {
		return nil, err
	}
	return func(f views.Form) templ.Component {
		*slot(&p) = f
		return views.SettingsProfilePage(p)
	}, nil
}

func avatarSlot(p *views.ProfileSettings) *views.Form   { return &p.Avatar }
func profileSlot(p *views.ProfileSettings) *views.Form  { return &p.Profile }
func emailSlot(p *views.ProfileSettings) *views.Form    { return &p.Email }
func codeSlot(p *views.ProfileSettings) *views.Form     { return &p.Code }
func passwordSlot(p *views.ProfileSettings) *views.Form { return &p.Password }

// settingsError is applyError plus the settings pages' own errors, and the
// status to answer with.
func settingsError(f *views.Form, err error) (int, bool) {
	switch {
	case errors.Is(err, accounts.ErrEmailTaken), errors.Is(err, accounts.ErrNoEmailChange):
		f.Error = err.Error()
		return http.StatusUnprocessableEntity, true
	case errors.Is(err, accounts.ErrResendTooSoon):
		f.Error = err.Error()
		return http.StatusTooManyRequests, true
	}
	return http.StatusUnprocessableEntity, applyError(f, err)
}

// userKey names a user in rate-limit keys.
func userKey(u queries.User) string { return fmt.Sprint(u.ID) }

func (h *Handlers) showProfilePage(c echo.Context) error {
	u, _ := currentUser(c)
	p, err := h.profileSettings(c, u)
	if err != nil {
		return err
	}
	h.viewAsAPICall(c, "getMe", nil)
	return render(c, http.StatusOK, views.SettingsProfilePage(p))
}

func (h *Handlers) updateProfile(c echo.Context) error {
	u, _ := currentUser(c)
	f := formFrom(c, "name", "language")
	page, err := h.profilePage(c, u, profileSlot)
	if err != nil {
		return err
	}
	if done, err := h.limit(c, profileSavePerUser, userKey(u), &f, page); done {
		return err
	}
	in := accounts.ProfileInput{Name: f.Value("name"), Language: f.Value("language")}
	if _, err := h.Accounts.UpdateProfile(c.Request().Context(), u, in, actor(c)); err != nil {
		return profileFailed(c, page, f, err)
	}
	h.flash(c, "FlashProfileSaved")
	return redirect(c, "/settings/profile")
}

// profileFailed re-renders the profile page with the failed form, or
// returns err when it is not one users can act on.
func profileFailed(c echo.Context, page func(views.Form) templ.Component, f views.Form, err error) error {
	status, ok := settingsError(&f, err)
	if !ok {
		return err
	}
	return render(c, status, page(f))
}

func (h *Handlers) requestEmailChange(c echo.Context) error {
	u, _ := currentUser(c)
	f := formFrom(c, "new_email", "email_password")
	page, err := h.profilePage(c, u, emailSlot)
	if err != nil {
		return err
	}
	if done, err := h.limit(c, emailChangePerUser, userKey(u), &f, page); done {
		return err
	}
	if err := h.Accounts.RequestEmailChange(c.Request().Context(), u, f.Value("new_email"), f.Value("email_password"), actor(c)); err != nil {
		return profileFailed(c, page, f, err)
	}
	h.flash(c, "FlashEmailCodeSent")
	return redirect(c, "/settings/profile")
}

func (h *Handlers) confirmEmailChange(c echo.Context) error {
	u, _ := currentUser(c)
	f := formFrom(c, "code")
	page, err := h.profilePage(c, u, codeSlot)
	if err != nil {
		return err
	}
	if done, err := h.limit(c, ratelimit.VerifyPerIP, c.RealIP(), &f, page); done {
		return err
	}
	if _, ok := accounts.NormalizeCode(f.Value("code")); !ok {
		f.Errors["code"] = "ErrCodeFormat"
		return render(c, http.StatusUnprocessableEntity, page(f))
	}
	if _, err := h.Accounts.ConfirmEmailChange(c.Request().Context(), u, f.Value("code"), actor(c)); err != nil {
		return profileFailed(c, page, f, err)
	}
	h.flash(c, "FlashEmailChanged")
	return redirect(c, "/settings/profile")
}

func (h *Handlers) resendEmailChangeCode(c echo.Context) error {
	u, _ := currentUser(c)
	f := views.NewForm()
	page, err := h.profilePage(c, u, codeSlot)
	if err != nil {
		return err
	}
	if done, err := h.limit(c, emailChangePerUser, userKey(u), &f, page); done {
		return err
	}
	if err := h.Accounts.ResendEmailChangeCode(c.Request().Context(), u); err != nil {
		return profileFailed(c, page, f, err)
	}
	h.flash(c, "FlashCodeSent")
	return redirect(c, "/settings/profile")
}

func (h *Handlers) cancelEmailChange(c echo.Context) error {
	u, _ := currentUser(c)
	if err := h.Accounts.CancelEmailChange(c.Request().Context(), u, actor(c)); err != nil {
		return err
	}
	h.flash(c, "FlashEmailChangeCancelled")
	return redirect(c, "/settings/profile")
}

func (h *Handlers) changePassword(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	f := views.NewForm() // passwords are never shown again
	page, err := h.profilePage(c, u, passwordSlot)
	if err != nil {
		return err
	}
	if done, err := h.limit(c, passwordChangePerUser, userKey(u), &f, page); done {
		return err
	}
	sid, _ := c.Get(ctxSessionID).(string)
	err = h.Accounts.ChangePassword(ctx, u, c.FormValue("current_password"), c.FormValue("new_password"), sid,
		c.FormValue("revoke_api_keys") == "on", actor(c))
	if err != nil {
		return profileFailed(c, page, f, err)
	}
	// A new cookie token for this browser too, as after signing in.
	if err := h.renewSession(ctx); err != nil {
		return err
	}
	h.flash(c, "FlashPasswordChanged")
	return redirect(c, "/settings/profile")
}
