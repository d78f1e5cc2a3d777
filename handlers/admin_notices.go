package handlers

import (
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/config"
	"github.com/kubebyon/kubebyon/views"
)

// loopbackBaseURL is the base URL when it names this machine only (the
// default, http://localhost:8080), else empty: every join command and
// emailed link is made from it.
func (h *Handlers) loopbackBaseURL() string {
	if config.LoopbackBaseURL(h.BaseURL) {
		return h.BaseURL
	}
	return ""
}

// adminNotices tells the admin pages what is wrong with the platform's
// configuration, and which version runs (for their footer).
func (h *Handlers) adminNotices(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		page := views.PageOf(c.Request().Context())
		page.LoopbackBaseURL = h.loopbackBaseURL()
		page.Version = h.Version
		return next(c)
	}
}
