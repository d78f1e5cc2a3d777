package handlers

import (
	"errors"
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/input"
)

// rejectUnstorableInput refuses every request whose path, query or form
// holds text PostgreSQL cannot store (NUL, invalid UTF-8), before any
// handler, rate limit or query sees it. One check here covers every route
// and form, the ones to come included. A path parameter that cannot be
// stored names nothing that exists: 404, as an unknown path (and before
// the route's sign-in or key check, as there); a query or form gets 422
// naming the fields (handleError).
func rejectUnstorableInput(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for _, p := range c.ParamValues() {
			if !input.Storable(p) {
				return echo.ErrNotFound
			}
		}
		values := c.QueryParams()
		if hasFormBody(c.Request()) {
			form, err := c.FormParams()
			if err != nil {
				var he *echo.HTTPError
				if errors.As(err, &he) {
					return he
				}
				return echo.NewHTTPError(http.StatusBadRequest, "ErrFormUnreadable").SetInternal(err)
			}
			// The form holds the query's values and a multipart form's
			// text parts too (net/http merges them).
			values = form
		}
		if fe := input.CheckValues(values); fe != nil {
			return fe
		}
		return next(c)
	}
}

// hasFormBody reports whether the request carries a form: URL-encoded or
// multipart.
func hasFormBody(r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return false
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	return mt == echo.MIMEApplicationForm || mt == echo.MIMEMultipartForm
}

// fieldsSummary lists fields with their messages, for pages that show the
// errors of a form they cannot render again (handleError).
func fieldsSummary(fe input.Errors, t func(string) string) string {
	parts := make([]string, 0, len(fe))
	for _, n := range fe.Names() {
		parts = append(parts, "“"+n+"”: "+t(fe[n]))
	}
	return strings.Join(parts, " ")
}
