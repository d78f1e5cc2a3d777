package handlers

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/input"
)

// apiTwoFactor is whom the platform requires two-factor authentication
// of: off, admins or all.
type apiTwoFactor struct {
	Require string `json:"require"`
}

// twoFactorTag is the entity tag of the stored requirement.
func (h *Handlers) twoFactorTag(ctx context.Context) (string, error) {
	return h.Accounts.TwoFactorPolicyTag(ctx)
}

// showAPITwoFactor is GET /api/v1/admin/settings/two-factor.
func (h *Handlers) showAPITwoFactor(c echo.Context) error {
	if err := setETag(c, h.twoFactorTag); err != nil {
		return err
	}
	p, err := h.Accounts.LoadTwoFactorPolicy(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiTwoFactor{Require: string(p)})
}

// updateAPITwoFactor is PATCH /api/v1/admin/settings/two-factor: the
// admin key stands in for the password the page asks.
func (h *Handlers) updateAPITwoFactor(c echo.Context) error {
	var body struct {
		Require *string `json:"require"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if body.Require != nil {
		_, err := h.Accounts.SaveTwoFactorPolicy(c.Request().Context(), accounts.TwoFactorPolicy(*body.Require), "", actor(c))
		if errors.Is(err, accounts.ErrTwoFactorPolicy) {
			return input.Errors{"require": err.Error()}
		}
		if err != nil {
			return adminAPIError(err, nil)
		}
	}
	return h.showAPITwoFactor(c)
}

// resetAPIAdminUserTwoFactor is POST /api/v1/admin/users/:id/two-factor-reset.
// An account without two-factor is 409.
func (h *Handlers) resetAPIAdminUserTwoFactor(c echo.Context) error {
	id, err := adminUserIDParam(c)
	if err != nil {
		return err
	}
	err = h.Accounts.ResetTwoFactor(c.Request().Context(), id, "", actor(c))
	if errors.Is(err, accounts.ErrTwoFactorOff) {
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	}
	if err != nil {
		return apiAdminUserError(err)
	}
	return c.NoContent(http.StatusNoContent)
}
