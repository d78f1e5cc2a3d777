package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/input"
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
	sessions, err := h.Accounts.Sessions(ctx, u.ID)
	if err != nil {
		return err
	}
	d.Current, _ = c.Get(ctxSessionID).(string)
	for _, s := range sessions {
		d.Sessions = append(d.Sessions, views.UserSession{
			ID: s.ID, Device: h.deviceOf(s.UserAgent), IP: s.Ip, Started: s.CreatedAt.Time, LastSeen: s.LastSeenAt.Time,
		})
	}
	return render(c, http.StatusOK, views.SettingsSignInPage(d))
}

// endUserSession signs out one of the user's other browsers.
func (h *Handlers) endUserSession(c echo.Context) error {
	u, _ := currentUser(c)
	err := h.Accounts.EndUserSession(c.Request().Context(), u.ID, c.Param("session"), actor(c))
	switch {
	case errors.Is(err, accounts.ErrSessionNotFound):
		return echo.ErrNotFound
	case err != nil:
		return err
	}
	h.flash(c, "FlashSessionEnded")
	return redirect(c, "/settings/sign-in")
}

// endOtherSessions signs out every browser of the user but this one.
func (h *Handlers) endOtherSessions(c echo.Context) error {
	u, _ := currentUser(c)
	keep, _ := c.Get(ctxSessionID).(string)
	if _, err := h.Accounts.EndOtherSessions(c.Request().Context(), u.ID, keep, actor(c)); err != nil {
		return err
	}
	h.flash(c, "FlashSessionsEnded")
	return redirect(c, "/settings/sign-in")
}

// deviceOf names a browser by its User-Agent, shortly: its browser and
// system as the parser tells them, else the start of the header.
func (h *Handlers) deviceOf(ua string) string {
	agent := h.userAgents.Parse(ua)
	switch browser, system := agent.GetBrowser(), agent.GetOS(); {
	case browser != "" && system != "":
		return browser + ", " + system
	case browser != "" || system != "":
		return browser + system
	case ua == "":
		return "—"
	}
	return input.Truncate(ua, 60)
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
