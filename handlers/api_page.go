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

// idPageOf reads the page of a list ordered by id, newest first: its
// limit, and the id it starts below (beforeID).
func idPageOf(c echo.Context) (apiPage, int64, error) {
	p, err := apiPageOf(c)
	if err != nil {
		return p, 0, err
	}
	before, err := p.beforeID()
	return p, before, err
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
