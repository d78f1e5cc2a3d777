package handlers

import (
	"errors"
	"maps"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/views"
)

// adminSaveError answers an admin's change that failed with err (not
// nil), what every admin form does: 404 for an admin who is no longer one
// (adminauth.ErrNotAdmin); else the form f again, by render, with the
// fields' errors (input.Errors) and notSaved (a message ID) as its error
// (422), the password field's error for a confirmation wrong or missing
// (adminauth.ErrWrongPassword, or passwordRequired: the service's own,
// nil for none), or the wait after too many confirmations (429). Any
// other error is returned as it is. A form's own errors are the caller's,
// before it hands err on.
func adminSaveError(c echo.Context, err error, f *views.Form, notSaved string, passwordRequired error, render func(status int) error) error {
	var invalid input.Errors
	var limited *adminauth.LimitedError
	switch {
	case errors.Is(err, adminauth.ErrNotAdmin):
		return echo.ErrNotFound
	case errors.As(err, &invalid):
		maps.Copy(f.Errors, invalid)
	case errors.Is(err, adminauth.ErrWrongPassword), errors.Is(err, passwordRequired):
		f.Errors["password"] = err.Error()
	case errors.As(err, &limited):
		waitForm(c, f, limited.RetryAfter)
		return render(http.StatusTooManyRequests)
	default:
		return err
	}
	f.Error = notSaved
	return render(http.StatusUnprocessableEntity)
}
