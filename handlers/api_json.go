package handlers

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/input"
)

// decodeJSON reads the request's body, one JSON object, into v: every API
// handler reads its body with it. A body sent as anything but
// application/json is 415; malformed JSON, invalid UTF-8, a field given
// twice or one v does not have are 400; text PostgreSQL cannot store
// (a \u0000 escape) is 422 naming the field (handleError).
func decodeJSON(c echo.Context, v any) error {
	mt, _, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if err != nil || mt != echo.MIMEApplicationJSON {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, "ErrAPIUnsupportedMediaType")
	}
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		return echo.NewHTTPError(http.StatusBadRequest, "ErrAPIInvalidJSON").SetInternal(err)
	}
	// Duplicate names and invalid UTF-8 are refused by default.
	if err := json.Unmarshal(body, v, json.RejectUnknownMembers(true)); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "ErrAPIInvalidJSON").SetInternal(err)
	}
	if fe := unstorableJSON(body); fe != nil {
		return fe
	}
	return nil
}

// unstorableJSON finds the members of a valid JSON document whose name or
// string value holds NUL, keyed by their top-level name.
func unstorableJSON(body []byte) input.Errors {
	var fe input.Errors
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			// The document was decoded already: the end is io.EOF.
			return fe
		}
		if tok.Kind() != '"' || input.Storable(tok.String()) {
			continue
		}
		if fe == nil {
			fe = input.Errors{}
		}
		var name string
		for t := range dec.StackPointer().Tokens() {
			name = t
			break
		}
		fe[input.Printable(name)] = input.ErrUnstorable
	}
}
