package handlers

import (
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"
)

// maxSortedPage bounds ?page= of a sorted list: 10,000 pages of a few
// dozen rows, an offset PostgreSQL takes.
const maxSortedPage = 10_000

// listSort reads how a sortable list is asked for: ?sort=, a key of keys
// (any other is the list's own order, ""); ?dir=desc for descending; and
// ?page=, the page of the sorted list from 1 (a sorted list pages by
// offset, its own order by its cursor).
func listSort(c echo.Context, keys []string) (key string, desc bool, page int) {
	if key = c.QueryParam("sort"); !slices.Contains(keys, key) {
		return "", false, 1
	}
	page, err := strconv.Atoi(c.QueryParam("page"))
	if err != nil || page < 1 {
		page = 1
	}
	// A page beyond any list (offset past int32) is the last there is:
	// empty, not an error.
	page = min(page, maxSortedPage)
	return key, c.QueryParam("dir") == "desc", page
}
