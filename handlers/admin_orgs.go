package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminorgs"
	"github.com/kubebyon/kubebyon/internal/orgs"
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

// showAdminOrgPage is one organization with its plan, subscription and
// usage, members, clusters and invitations.
func (h *Handlers) showAdminOrgPage(c echo.Context) error {
	id, err := adminOrgIDParam(c)
	if err != nil {
		return err
	}
	h.viewAsAPICall(c, "adminGetOrganization", nil, c.Param("id"))
	return h.renderAdminOrgPage(c, http.StatusOK, id, views.NewForm(), "")
}

// adminOrgIDParam is the :id of the path's organization; a malformed one
// is not found.
func adminOrgIDParam(c echo.Context) (int64, error) { return pathID(c, "id", echo.ErrNotFound) }

// renderAdminOrgPage shows the organization with id; subForm is the form
// of a subscription change (subAction, admin_billing.go), when one was
// submitted and failed.
func (h *Handlers) renderAdminOrgPage(c echo.Context, status int, id int64, subForm views.Form, subAction string) error {
	ctx := c.Request().Context()
	d, err := h.AdminOrgs.Get(ctx, id)
	if errors.Is(err, adminorgs.ErrNotFound) {
		return echo.ErrNotFound
	}
	if err != nil {
		return err
	}
	use, err := h.Billing.UsageOfOrg(ctx, id)
	if errors.Is(err, orgs.ErrNotFound) {
		// Deleted since Get read it.
		return echo.ErrNotFound
	}
	if err != nil {
		return err
	}
	sub, err := h.adminSubscriptionOf(ctx, use.Subscription, fmt.Sprintf("/admin/organizations/%d/subscription", id), subForm, subAction)
	if err != nil {
		return err
	}
	sub.ForOrg = true
	p := use.Plan
	return render(c, status, views.AdminOrgPage(views.AdminOrgDetail{
		Detail: d, Sub: sub, Ingress: p.IngressAllowed,
		Limits: []views.BillingLimit{
			{Key: "clusters", LabelID: "AdminOrgUsageClusters", Used: use.Clusters, Max: int64(p.MaxClusters)},
			{Key: "nodes", LabelID: "AdminOrgUsageNodes", Used: use.MostNodes, Max: int64(p.MaxNodesPerCluster)},
			{Key: "hostnames", LabelID: "AdminOrgUsageHostnames", Used: use.MostHostnames, Max: int64(p.MaxHostnamesPerCluster)},
		},
	}))
}

// setAdminOrgPlan is POST /admin/organizations/:id/subscription/plan:
// the organization is on the plan from now, with no period end, for a
// reason.
func (h *Handlers) setAdminOrgPlan(c echo.Context) error {
	return h.changeOrgSubscription(c, adminSubSetPlan, "FlashAdminOrgSubPlan")
}

// extendAdminOrgSubscription is POST
// /admin/organizations/:id/subscription/extend: the organization's paid
// period ends days later, for a reason.
func (h *Handlers) extendAdminOrgSubscription(c echo.Context) error {
	return h.changeOrgSubscription(c, adminSubExtend, "FlashAdminSubExtended")
}

// cancelAdminOrgSubscription is POST
// /admin/organizations/:id/subscription/cancel: the organization is on
// the default plan at once, for a reason.
func (h *Handlers) cancelAdminOrgSubscription(c echo.Context) error {
	return h.changeOrgSubscription(c, adminSubCancel, "FlashAdminOrgSubCancelled")
}

// changeOrgSubscription makes a change to the subscription of the path's
// organization from its page, as the user page's forms do to a personal
// one's (an organization that does not exist is not found).
func (h *Handlers) changeOrgSubscription(c echo.Context, change adminSubChange, flash string) error {
	id, err := adminOrgIDParam(c)
	if err != nil {
		return err
	}
	f, err := change.run(h, c, id)
	return h.subscriptionChanged(c, adminSubPage{
		url: fmt.Sprintf("/admin/organizations/%d", id),
		render: func(status int, f views.Form, action string) error {
			return h.renderAdminOrgPage(c, status, id, f, action)
		},
	}, change.action, f, err, flash)
}
