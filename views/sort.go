package views

import (
	"net/url"
	"strconv"

	"github.com/a-h/templ"
)

// Sort is the order a sortable table is shown in, and what its header's
// links keep: Key is the column sorted by ("" for the list's own order),
// Desc its direction; Path is the list's page and Query its other
// parameters (its filters; never a page or a cursor, which a new order
// starts again).
type Sort struct {
	Path  string
	Query url.Values
	Key   string
	Desc  bool
}

// SortDir is the ?dir= of a direction.
func SortDir(desc bool) string {
	if desc {
		return "desc"
	}
	return "asc"
}

// URL is the list under Query in the order of key, descending when desc,
// at its page-th page (from 1).
func (s Sort) URL(key string, desc bool, page int) string {
	v := url.Values{}
	for k, vs := range s.Query {
		v[k] = vs
	}
	if key != "" {
		v.Set("sort", key)
		v.Set("dir", SortDir(desc))
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	if len(v) == 0 {
		return s.Path
	}
	return s.Path + "?" + v.Encode()
}

// headerURL is the link of key's header: ascending, or the other way
// round when the table is sorted by key already.
func (s Sort) headerURL(key string) templ.SafeURL {
	return templ.SafeURL(s.URL(key, s.Key == key && !s.Desc, 1))
}

// ariaSort is the header's aria-sort, for the column sorted by.
func (s Sort) ariaSort() string {
	if s.Desc {
		return "descending"
	}
	return "ascending"
}

// sortIcon is the arrow of key's header: which way it is sorted, or
// that it can be.
func (s Sort) sortIcon(key string) string {
	switch {
	case s.Key != key:
		return "arrow-up-down"
	case s.Desc:
		return "arrow-down"
	}
	return "arrow-up"
}
