package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/views"
)

// showHomePage is the landing page, or the dashboard for a signed-in user.
func (h *Handlers) showHomePage(c echo.Context) error {
	if u, ok := currentUser(c); ok {
		return render(c, http.StatusOK, views.Dashboard(u.Name))
	}
	return render(c, http.StatusOK, views.Home())
}

// showStatus is the status panel fragment the home page loads with htmx.
func (h *Handlers) showStatus(c echo.Context) error {
	err := h.ready(c)
	if err != nil {
		h.Logger.WarnContext(c.Request().Context(), "platform not ready", "error", err)
	}
	return render(c, http.StatusOK, views.Status(err == nil))
}
