package handlers

import (
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/views"
)

// viewAsAPICall gives the page its "view as API call" disclosure: the
// call of the API operation named by its operationId in the description
// (internal/apispec), with params filling the path's {names} in order and
// query, if any, after it. An operation the description does not have, or
// too few params, gives none: the pages' test names every page's call.
func (h *Handlers) viewAsAPICall(c echo.Context, operationID string, query url.Values, params ...string) {
	op, ok := h.apiOps[operationID]
	if !ok {
		return
	}
	path := op.Path
	for _, p := range params {
		open := strings.IndexByte(path, '{')
		end := strings.IndexByte(path, '}')
		if open < 0 || end < open {
			return
		}
		path = path[:open] + url.PathEscape(p) + path[end+1:]
	}
	if strings.ContainsRune(path, '{') {
		return
	}
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	views.PageOf(c.Request().Context()).APICall = &views.APICall{
		Method: op.Method, URL: strings.TrimRight(h.BaseURL, "/") + path,
		Reference: "/api/reference#/" + op.Tag + "/" + operationID,
	}
}
