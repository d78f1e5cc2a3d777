package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/views"
)

// saveAdminTwoFactor is POST /admin/settings/two-factor: whom the
// platform requires to use two-factor authentication, confirmed with the
// admin's password: nobody, the admins only or everyone. Admins hold the
// platform's keys, so requiring it of them alone is the step a platform
// that cannot yet ask it of every user takes first.
func (h *Handlers) saveAdminTwoFactor(c echo.Context) error {
	f := views.NewForm()
	changed, err := h.Accounts.SaveTwoFactorPolicy(c.Request().Context(), accounts.TwoFactorPolicy(c.FormValue("require")), c.FormValue("password"), actor(c))
	if errors.Is(err, accounts.ErrTwoFactorPolicy) {
		f.Error = err.Error()
		return h.renderAdminSignInPage(c, http.StatusUnprocessableEntity, nil, nil, f)
	}
	if err != nil {
		return adminSaveError(c, err, &f, "ErrAdminTwoFactorNotSaved", nil, func(status int) error {
			return h.renderAdminSignInPage(c, status, nil, nil, f)
		})
	}
	if changed {
		h.flash(c, "FlashAdminTwoFactorSaved")
	} else {
		h.flash(c, "FlashAdminSignInUnchanged")
	}
	return redirect(c, adminSignInPath+"#two-factor")
}

// resetAdminUserTwoFactor turns two-factor authentication off for an
// account whose owner lost their app and recovery codes, confirmed with
// the admin's password; they sign in with their password alone again.
func (h *Handlers) resetAdminUserTwoFactor(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return echo.ErrNotFound
	}
	err = h.Accounts.ResetTwoFactor(c.Request().Context(), id, c.FormValue("password"), actor(c))
	f := views.NewForm()
	const a = adminusers.Action("two-factor-reset")
	switch {
	case err == nil:
		h.flash(c, "FlashAdminTwoFactorReset")
		return redirect(c, fmt.Sprintf("/admin/users/%d", id))
	case errors.Is(err, accounts.ErrUserNotFound):
		return echo.ErrNotFound
	case errors.Is(err, accounts.ErrTwoFactorOff):
		f.Error = err.Error()
		return h.renderAdminUser(c, http.StatusUnprocessableEntity, id, f, a)
	}
	return adminSaveError(c, err, &f, "", nil, func(status int) error {
		return h.renderAdminUser(c, status, id, f, a)
	})
}
