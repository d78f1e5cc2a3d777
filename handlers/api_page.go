package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
)

// Every list of the API is read a page at a time: the answer is an
// object with the page's items under their name and "next", the cursor of
// the page after, absent on the last page. The client sends it back as
// ?cursor= to read on; ?limit= takes 1 to apiPageMax items, apiPageDefault
// when absent. A cursor is opaque to clients: a string to send back as it
// came.
const (
	apiPageDefault = 50
	apiPageMax     = 100
)

// apiPage is a list request's ?cursor= and ?limit=.
type apiPage struct {
	Cursor string
	Limit  int
}

// apiPageOf reads the list request's page: 400 for a limit out of range.
func apiPageOf(c echo.Context) (apiPage, error) {
	p := apiPage{Cursor: c.QueryParam("cursor"), Limit: apiPageDefault}
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > apiPageMax {
			return p, echo.NewHTTPError(http.StatusBadRequest, "ErrAPIInvalidLimit")
		}
		p.Limit = n
	}
	return p, nil
}

// apiIDPageOf reads the page of a list keyed by id: the page and the id
// its cursor names (beforeID), 0 for the first page.
func apiIDPageOf(c echo.Context) (apiPage, int64, error) {
	p, err := apiPageOf(c)
	if err != nil {
		return p, 0, err
	}
	id, err := p.beforeID()
	return p, id, err
}

// beforeID is the cursor of a list ordered by id, newest first: the id
// the page starts below, 0 for the first page; 400 for a cursor this list
// did not give.
func (p apiPage) beforeID() (int64, error) {
	if p.Cursor == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(p.Cursor, 10, 64)
	if err != nil || id <= 0 {
		return 0, echo.NewHTTPError(http.StatusBadRequest, "ErrAPIInvalidCursor")
	}
	return id, nil
}

// idCursor is the cursor of the page after one that ended at id: "" when
// there is none (id 0).
func idCursor(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// pageOf cuts rows, read with one row more than the page's limit, to the
// page, and gives the cursor after it by the last row's key: "" when no
// row was left over.
func pageOf[T any](rows []T, limit int, key func(T) string) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, key(rows[limit-1])
}

// idPage reads the page the list request asks for, of a list ordered by
// id, newest first: read gets up to limit rows below an id (0: from the
// newest), id gives a row's id and view shows a row. It answers the
// page's items and the cursor after them ("" on the last page).
func idPage[T, V any](c echo.Context, read func(beforeID int64, limit int32) ([]T, error), id func(T) int64, view func(T) V) ([]V, string, error) {
	p, before, err := apiIDPageOf(c)
	if err != nil {
		return nil, "", err
	}
	rows, err := read(before, int32(p.Limit)+1)
	if err != nil {
		return nil, "", err
	}
	rows, next := pageOf(rows, p.Limit, func(r T) string { return idCursor(id(r)) })
	out := make([]V, 0, len(rows))
	for _, r := range rows {
		out = append(out, view(r))
	}
	return out, next, nil
}

// namePageOf reads the page of a list ordered by name: its limit, and the
// name it starts after, "" for the first page; 400 for a cursor valid
// says no name of the list can be.
func namePageOf(c echo.Context, valid func(string) bool) (apiPage, string, error) {
	p, err := apiPageOf(c)
	if err != nil {
		return p, "", err
	}
	if p.Cursor != "" && !valid(p.Cursor) {
		return p, "", echo.NewHTTPError(http.StatusBadRequest, "ErrAPIInvalidCursor")
	}
	return p, p.Cursor, nil
}
