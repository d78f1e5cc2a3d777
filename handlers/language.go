package handlers

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
)

// switchLanguage is the user menu's language switch: it saves the chosen
// language as the profile's (as the profile form does, with its rate
// limit) and goes back to the page it was chosen on.
func (h *Handlers) switchLanguage(c echo.Context) error {
	u, _ := currentUser(c)
	ctx := c.Request().Context()
	back := safeNext(c.FormValue("back"))
	d, err := h.limits.Hit(ctx, profileSavePerUser, userKey(u), time.Now())
	if err != nil {
		return err
	}
	if !d.Allowed {
		h.flashError(c, "FlashLanguageRateLimited")
		return redirect(c, back)
	}
	in := accounts.ProfileInput{Name: u.Name, Language: c.FormValue("language")}
	if _, err := h.Accounts.UpdateProfile(ctx, u, in, actor(c)); err != nil {
		f := formFrom(c, "language")
		if _, ok := settingsError(&f, err); !ok {
			return err
		}
		h.flashError(c, "FlashLanguageRefused")
		return redirect(c, back)
	}
	return redirect(c, back)
}
