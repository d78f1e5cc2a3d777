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
