package handlers

import (
	"net/http"
	"strconv"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
)

// The helpers every area's handlers use to answer with HTML.

// render writes a component with the given status.
func render(c echo.Context, status int, comp templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return comp.Render(c.Request().Context(), c.Response())
}

// wantsFragment reports whether htmx asks for part of a page. A history
// restore (the page was not in htmx's cache) needs the whole page.
func wantsFragment(c echo.Context) bool {
	r := c.Request()
	return r.Header.Get("HX-Request") == "true" && r.Header.Get("HX-History-Restore-Request") != "true"
}

// renderPageOrFragment renders the fragment for htmx, the page otherwise.
// Caches must keep the two apart, as they share a URL.
func renderPageOrFragment(c echo.Context, page, fragment templ.Component) error {
	c.Response().Header().Add("Vary", "HX-Request")
	if wantsFragment(c) {
		return render(c, http.StatusOK, fragment)
	}
	return render(c, http.StatusOK, page)
}

// queryID reads a keyset cursor; a missing or malformed one is the start.
func queryID(c echo.Context, name string) int64 {
	id, err := strconv.ParseInt(c.QueryParam(name), 10, 64)
	if err != nil || id < 0 {
		return 0
	}
	return id
}
