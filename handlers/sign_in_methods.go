package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/views"
)

func (h *Handlers) showSignInMethods(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	ids, err := h.Accounts.Identities(ctx, u.ID)
	if err != nil {
		return err
	}
	buttons, err := h.providerButtons(ctx)
	if err != nil {
		return err
	}
	d := views.SignInMethods{HasPassword: u.PasswordHash.Valid}
	linked := map[string]bool{}
	for _, i := range ids {
		linked[i.Provider] = true
		d.Identities = append(d.Identities, views.LinkedIdentity{
			ID: i.ID, Name: i.Provider, Provider: providerLabel(buttons, i.Provider), Email: i.Email, Linked: i.CreatedAt.Time,
		})
	}
	for _, p := range buttons {
		if !linked[p.Name] {
			d.Linkable = append(d.Linkable, p)
		}
	}
	return render(c, http.StatusOK, views.SettingsSignInPage(d))
}

func (h *Handlers) unlinkIdentity(c echo.Context) error {
	u, _ := currentUser(c)
	id, err := strconv.ParseInt(c.Param("identity"), 10, 64)
	if err != nil {
		return echo.ErrNotFound
	}
	err = h.Accounts.UnlinkIdentity(c.Request().Context(), u.ID, id, actor(c))
	switch {
	case errors.Is(err, accounts.ErrIdentityNotFound):
		return echo.ErrNotFound
	case errors.Is(err, accounts.ErrLastSignInMethod):
		h.flashError(c, err.Error())
	case err != nil:
		return err
	default:
		h.flash(c, "FlashIdentityUnlinked")
	}
	return redirect(c, "/settings/sign-in")
}
