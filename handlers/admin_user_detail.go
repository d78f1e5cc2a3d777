package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/apikeys"
	"github.com/kubebyon/kubebyon/views"
)

// adminUserMore is what the page shows of d beside the profile.
func adminUserMore(d adminusers.Detail) views.AdminUserMore {
	m := views.AdminUserMore{HasPassword: d.User.PasswordHash.Valid, HasClusters: len(d.Clusters) > 0}
	for _, c := range d.Clusters {
		m.Clusters = append(m.Clusters, views.AdminUserCluster{
			ID: c.ID, Name: c.Name, Status: c.Status, Version: c.KubernetesVersion, Nodes: c.Nodes, Created: timeOf(c.CreatedAt),
		})
	}
	now := time.Now()
	for _, k := range d.APIKeys {
		m.APIKeys = append(m.APIKeys, views.AdminUserAPIKey{
			ID: k.ID, Name: k.Name, Status: apikeys.Status(k, now),
			Created: timeOf(k.CreatedAt), LastUsed: timeOf(k.LastUsedAt), Expires: timeOf(k.ExpiresAt), Revoked: timeOf(k.RevokedAt),
		})
	}
	for _, i := range d.Identities {
		m.Identities = append(m.Identities, views.AdminUserIdentity{Provider: i.Provider, Since: timeOf(i.CreatedAt)})
	}
	return m
}

// revokeAdminUserAPIKey ends one of the account's API keys, as the user
// would from their own key list; the audit event names the admin.
func (h *Handlers) revokeAdminUserAPIKey(c echo.Context) error {
	id, err1 := strconv.ParseInt(c.Param("id"), 10, 64)
	keyID, err2 := strconv.ParseInt(c.Param("keyid"), 10, 64)
	if err1 != nil || err2 != nil {
		return echo.ErrNotFound
	}
	err := h.APIKeys.Revoke(c.Request().Context(), id, keyID, actor(c))
	if errors.Is(err, apikeys.ErrNotFound) {
		return echo.ErrNotFound
	}
	if err != nil {
		return err
	}
	h.flash(c, "FlashAdminAPIKeyRevoked")
	return redirect(c, fmt.Sprintf("/admin/users/%d", id))
}

// resetAdminUserPassword mails the account a password reset code.
func (h *Handlers) resetAdminUserPassword(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return echo.ErrNotFound
	}
	err = h.Accounts.SendPasswordReset(c.Request().Context(), id, actor(c))
	switch {
	case err == nil:
		h.flash(c, "FlashAdminPasswordResetSent")
		return redirect(c, fmt.Sprintf("/admin/users/%d", id))
	case errors.Is(err, accounts.ErrUserNotFound):
		return echo.ErrNotFound
	case errors.Is(err, accounts.ErrResetInactive), errors.Is(err, accounts.ErrResendTooSoon):
		f := views.NewForm()
		f.Error = err.Error()
		return h.renderAdminUser(c, http.StatusUnprocessableEntity, id, f, "password_reset")
	}
	return err
}

// deleteAdminUser removes the account, confirmed by its email and the
// admin's password.
func (h *Handlers) deleteAdminUser(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return echo.ErrNotFound
	}
	email := c.FormValue("email")
	err = h.AdminUsers.Delete(c.Request().Context(), id, email, c.FormValue("password"), actor(c))
	f := views.NewForm()
	f.Values["email"] = email
	const a = adminusers.Action("delete")
	switch {
	case err == nil:
		h.flash(c, "FlashAdminUserDeleted")
		return redirect(c, "/admin/users")
	case errors.Is(err, adminusers.ErrNotFound):
		return echo.ErrNotFound
	case errors.Is(err, adminusers.ErrEmailMismatch):
		f.Errors["email"] = err.Error()
		return h.renderAdminUser(c, http.StatusUnprocessableEntity, id, f, a)
	case errors.Is(err, adminusers.ErrSelfDelete), errors.Is(err, adminusers.ErrHasClusters), errors.Is(err, adminusers.ErrHasOrders),
		errors.Is(err, adminusers.ErrSoleOwner):
		f.Error = err.Error()
		return h.renderAdminUser(c, http.StatusUnprocessableEntity, id, f, a)
	}
	return adminSaveError(c, err, &f, "", nil, func(status int) error {
		return h.renderAdminUser(c, status, id, f, a)
	})
}
