package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminorgs"
	"github.com/kubebyon/kubebyon/views"
)

// showAdminOrgsPage lists every organization, newest first, or those
// whose name or a member's email holds ?q=, a page at a time (?before=).
func (h *Handlers) showAdminOrgsPage(c echo.Context) error {
	search, before := strings.TrimSpace(c.QueryParam("q")), queryID(c, "before")
	page, err := h.AdminOrgs.List(c.Request().Context(), search, before, adminorgs.PageSize)
	if err != nil {
		return err
	}
	m := views.AdminOrgList{Query: search, Orgs: page.Orgs}
	if page.NextBefore != 0 {
		m.NextURL = adminOrgsURL(search, page.NextBefore)
	}
	if before != 0 {
		m.FirstURL = adminOrgsURL(search, 0)
	}
	var query url.Values
	if search != "" {
		query = url.Values{"q": {search}}
	}
	h.viewAsAPICall(c, "adminListOrganizations", query)
	return renderPageOrFragment(c, views.AdminOrgsPage(m), views.AdminOrgsResults(m))
}

// adminOrgsURL is a page of the organization list.
func adminOrgsURL(search string, before int64) string {
	v := url.Values{}
	if search != "" {
		v.Set("q", search)
	}
	if before != 0 {
		v.Set("before", strconv.FormatInt(before, 10))
	}
	if len(v) == 0 {
		return "/admin/organizations"
	}
	return "/admin/organizations?" + v.Encode()
}

// showAdminOrgPage is one organization with its members and invitations.
func (h *Handlers) showAdminOrgPage(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return echo.ErrNotFound
	}
	d, err := h.AdminOrgs.Get(c.Request().Context(), id)
	if errors.Is(err, adminorgs.ErrNotFound) {
		return echo.ErrNotFound
	}
	if err != nil {
		return err
	}
	h.viewAsAPICall(c, "adminGetOrganization", nil, c.Param("id"))
	return render(c, http.StatusOK, views.AdminOrgPage(d))
}
