package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/views"
)

// The helpers every area's handlers share: answering with HTML, reading
// forms and path parameters.

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

// formFrom copies the named form fields.
func formFrom(c echo.Context, names ...string) views.Form {
	f := views.NewForm()
	for _, n := range names {
		f.Values[n] = c.FormValue(n)
	}
	return f
}

// clusterIDParam is the :id of the path; a malformed one is not found.
func clusterIDParam(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return 0, errClusterNotFound
	}
	return id, nil
}

// timeOf is a nullable time; NULL is the zero time.
func timeOf(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time
}
