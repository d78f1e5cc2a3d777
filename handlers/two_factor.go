package handlers

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
	"github.com/kubebyon/kubebyon/views"
)

// The user's security settings: two-factor authentication.
const (
	securityPath       = "/settings/security"
	twoFactorSetupPath = "/settings/security/two-factor"
)

// qrSize is the QR code's width and height in pixels.
const qrSize = 220

// showSecurityPage shows whether two-factor authentication is on, since
// when and how many recovery codes are left, with the ways to change it.
func (h *Handlers) showSecurityPage(c echo.Context) error {
	return h.renderSecurity(c, http.StatusOK, views.NewForm())
}

func (h *Handlers) renderSecurity(c echo.Context, status int, f views.Form) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	st, err := h.Accounts.TwoFactorStatus(ctx, u.ID)
	if err != nil {
		return err
	}
	required, err := h.Accounts.TwoFactorRequired(ctx, u)
	if err != nil {
		return err
	}
	return render(c, status, views.SettingsSecurityPage(views.Security{
		Form: f, Enabled: st.Enabled, Since: st.Since, CodesLeft: st.CodesLeft,
		HasPassword: u.PasswordHash.Valid, Required: required,
	}))
}

// showTwoFactorSetupPage shows the QR code and the secret of the user's
// enrolment (started here, or the one they started before) and asks for
// a code to confirm it.
func (h *Handlers) showTwoFactorSetupPage(c echo.Context) error {
	return h.renderTwoFactorSetup(c, http.StatusOK, views.NewForm())
}

func (h *Handlers) renderTwoFactorSetup(c echo.Context, status int, f views.Form) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	e, err := h.Accounts.StartTwoFactor(ctx, u, h.Branding.Cached().ProductName)
	if errors.Is(err, accounts.ErrTwoFactorNotPending) {
		return redirect(c, securityPath)
	}
	if err != nil {
		return err
	}
	img, err := e.Key.Image(qrSize, qrSize)
	if err != nil {
		return fmt.Errorf("draw QR code: %w", err)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return fmt.Errorf("encode QR code: %w", err)
	}
	required, err := h.Accounts.TwoFactorRequired(ctx, u)
	if err != nil {
		return err
	}
	// The page shows the secret: no cache keeps it.
	c.Response().Header().Set("Cache-Control", "no-store")
	return render(c, status, views.TwoFactorSetupPage(views.TwoFactorSetup{
		Form: f, Secret: e.Secret, URL: e.Key.URL(), Required: required,
		QR: templ.SafeURL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())),
	}))
}

// twoFactorLimited counts a code typed in the security settings against
// the address and the user. Over a limit, it answers as h.limit does for
// the sign-in forms: the page again (429), f saying how long to wait; done
// says it answered.
func (h *Handlers) twoFactorLimited(c echo.Context, f *views.Form, again func(echo.Context, int, views.Form) error) (done bool, err error) {
	u, _ := currentUser(c)
	for _, l := range []struct {
		rule    ratelimit.Rule
		subject string
	}{{ratelimit.TwoFactorPerIP, c.RealIP()}, {ratelimit.TwoFactorPerUser, strconv.FormatInt(u.ID, 10)}} {
		d, err := h.limits.Hit(c.Request().Context(), l.rule, l.subject, time.Now())
		if err != nil {
			return true, err
		}
		if !d.Allowed {
			waitForm(c, f, d.RetryAfter)
			return true, again(c, http.StatusTooManyRequests, *f)
		}
	}
	return false, nil
}

// enableTwoFactor confirms the enrolment with a code from the app and
// shows the recovery codes, once: the answer to this POST is the only
// page that ever shows them.
func (h *Handlers) enableTwoFactor(c echo.Context) error {
	f := views.NewForm()
	if done, err := h.twoFactorLimited(c, &f, h.renderTwoFactorSetup); done {
		return err
	}
	u, _ := currentUser(c)
	codes, err := h.Accounts.EnableTwoFactor(c.Request().Context(), u, c.FormValue("code"), actor(c))
	switch {
	case errors.Is(err, accounts.ErrTwoFactorCode):
		f.Errors["code"] = err.Error()
		return h.renderTwoFactorSetup(c, http.StatusUnprocessableEntity, f)
	case errors.Is(err, accounts.ErrTwoFactorNotPending):
		return redirect(c, securityPath)
	case err != nil:
		return err
	}
	return h.showRecoveryCodes(c, codes, "TwoFactorEnabledNotice")
}

// regenerateRecoveryCodes replaces the recovery codes, confirmed by a
// code from the app, and shows the new ones once.
func (h *Handlers) regenerateRecoveryCodes(c echo.Context) error {
	f := views.NewForm()
	if done, err := h.twoFactorLimited(c, &f, h.renderSecurity); done {
		return err
	}
	u, _ := currentUser(c)
	codes, err := h.Accounts.RegenerateRecoveryCodes(c.Request().Context(), u, c.FormValue("regenerateCode"), actor(c))
	switch {
	case errors.Is(err, accounts.ErrTwoFactorCode):
		f.Errors["regenerateCode"] = err.Error()
		return h.renderSecurity(c, http.StatusUnprocessableEntity, f)
	case errors.Is(err, accounts.ErrTwoFactorOff):
		return redirect(c, securityPath)
	case err != nil:
		return err
	}
	return h.showRecoveryCodes(c, codes, "RecoveryCodesNewNotice")
}

func (h *Handlers) showRecoveryCodes(c echo.Context, codes []string, noticeID string) error {
	// The codes must not stay in a cache or come back with the back button.
	c.Response().Header().Set("Cache-Control", "no-store")
	return render(c, http.StatusOK, views.RecoveryCodesPage(codes, noticeID))
}

// disableTwoFactor turns two-factor off, confirmed by the password or a
// code from the app.
func (h *Handlers) disableTwoFactor(c echo.Context) error {
	f := views.NewForm()
	if done, err := h.twoFactorLimited(c, &f, h.renderSecurity); done {
		return err
	}
	u, _ := currentUser(c)
	err := h.Accounts.DisableTwoFactor(c.Request().Context(), u, c.FormValue("disablePassword"), c.FormValue("disableCode"), actor(c))
	switch {
	case errors.Is(err, accounts.ErrTwoFactorCode), errors.Is(err, accounts.ErrTwoFactorConfirm):
		f.Errors["disableCode"] = accounts.ErrTwoFactorConfirm.Error()
		return h.renderSecurity(c, http.StatusUnprocessableEntity, f)
	case errors.Is(err, accounts.ErrTwoFactorOff):
		return redirect(c, securityPath)
	case err != nil:
		return err
	}
	h.flash(c, "FlashTwoFactorDisabled")
	return redirect(c, securityPath)
}
