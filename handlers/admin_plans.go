package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// planFields are a plan form's fields.
var planFields = []string{
	"name", "name_zh", "description_en", "description_zh", "max_clusters", "max_nodes_per_cluster",
	"max_hostnames_per_cluster", "ingress_allowed", "currency", "free", "price_monthly", "price_yearly", "public", "sort_order",
	"backend_vcluster", "backend_kamaji",
}

// planForm is a stored plan as its form shows it.
func planForm(p queries.Plan) views.Form {
	f := views.NewForm()
	prices := planPrices(p)
	decimal := func(period billing.Period) string {
		if m, ok := billing.Price(p, period); ok {
			return m.Decimal()
		}
		return ""
	}
	on := func(b bool) string {
		if b {
			return "on"
		}
		return ""
	}
	f.Values = map[string]string{
		"name": p.Name, "name_zh": p.NameZh, "description_en": p.DescriptionEn, "description_zh": p.DescriptionZh,
		"max_clusters": strconv.Itoa(int(p.MaxClusters)), "max_nodes_per_cluster": strconv.Itoa(int(p.MaxNodesPerCluster)),
		"max_hostnames_per_cluster": strconv.Itoa(int(p.MaxHostnamesPerCluster)), "ingress_allowed": on(p.IngressAllowed),
		"currency": p.Currency, "free": on(prices.Free),
		"price_monthly": decimal(billing.Monthly), "price_yearly": decimal(billing.Yearly),
		"public": on(p.Public), "sort_order": strconv.Itoa(int(p.SortOrder)),
	}
	for _, b := range p.Backends {
		f.Values["backend_"+b] = "on"
	}
	return f
}

// newPlan is a new plan until the admin says otherwise: the free plan's
// limits, public. The back office's form shows it; the admin API's POST
// starts from it.
var newPlan = queries.Plan{
	MaxClusters: 3, MaxNodesPerCluster: 10, MaxHostnamesPerCluster: 10, IngressAllowed: true, Currency: "USD", Public: true,
}

// newPlanForm is the form of a new plan.
func newPlanForm() views.Form { return planForm(newPlan) }

// planInput reads a submitted plan form. A limit that is not a whole
// number reads as -1, which the service refuses with the limit's message.
func planInput(c echo.Context) (views.Form, billing.PlanInput) {
	f := formFrom(c, planFields...)
	number := func(name string) int32 {
		n, err := strconv.ParseInt(strings.TrimSpace(f.Value(name)), 10, 32)
		if err != nil {
			return -1
		}
		return int32(n)
	}
	order := number("sort_order")
	if strings.TrimSpace(f.Value("sort_order")) == "" {
		order = 0
	}
	var backends []string
	for _, b := range settings.Backends {
		if f.Value("backend_"+b) == "on" {
			backends = append(backends, b)
		}
	}
	return f, billing.PlanInput{
		Name: f.Value("name"), NameZh: f.Value("name_zh"), DescriptionEn: f.Value("description_en"), DescriptionZh: f.Value("description_zh"),
		MaxClusters: number("max_clusters"), MaxNodesPerCluster: number("max_nodes_per_cluster"),
		MaxHostnamesPerCluster: number("max_hostnames_per_cluster"), IngressAllowed: f.Value("ingress_allowed") == "on",
		Currency: f.Value("currency"), PriceMonthly: f.Value("price_monthly"), PriceYearly: f.Value("price_yearly"),
		Free: f.Value("free") == "on", Public: f.Value("public") == "on", SortOrder: order,
		Backends: backends,
	}
}

// showAdminPlansPage is GET /admin/plans.
func (h *Handlers) showAdminPlansPage(c echo.Context) error {
	h.viewAsAPICall(c, "adminListPlans", nil)
	return h.renderAdminPlans(c, http.StatusOK, newPlanForm())
}

func (h *Handlers) renderAdminPlans(c echo.Context, status int, f views.Form) error {
	plans, err := h.Billing.Plans(c.Request().Context())
	if err != nil {
		return err
	}
	m := views.AdminPlans{New: f, Currencies: billing.Supported}
	for _, p := range plans {
		m.Plans = append(m.Plans, views.AdminPlanRow{
			ID: p.ID, Name: p.Name, NameZh: p.NameZh,
			Clusters: p.MaxClusters, Nodes: p.MaxNodesPerCluster, Hostnames: p.MaxHostnamesPerCluster,
			Ingress: p.IngressAllowed, Public: p.Public, SortOrder: p.SortOrder,
			Prices:  planPrices(p),
			Default: p.IsDefault, Archived: p.ArchivedAt.Valid,
		})
	}
	return render(c, status, views.AdminPlansPage(m))
}

// createPlan is POST /admin/plans.
func (h *Handlers) createPlan(c echo.Context) error {
	f, in := planInput(c)
	p, err := h.Billing.CreatePlan(c.Request().Context(), in, actor(c))
	if err != nil {
		return adminSaveError(c, err, &f, "ErrPlanNotSaved", nil, func(status int) error {
			return h.renderAdminPlans(c, status, f)
		})
	}
	h.flash(c, "FlashPlanCreated")
	return redirect(c, fmt.Sprintf("/admin/plans/%d", p.ID))
}

// planParam is the :id of the path's plan; a malformed one is not found.
func (h *Handlers) planParam(c echo.Context) (queries.Plan, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return queries.Plan{}, echo.ErrNotFound
	}
	p, err := h.Billing.Plan(c.Request().Context(), id)
	if errors.Is(err, billing.ErrPlanNotFound) {
		return queries.Plan{}, echo.ErrNotFound
	}
	return p, err
}

// showAdminPlanPage is GET /admin/plans/:id.
func (h *Handlers) showAdminPlanPage(c echo.Context) error {
	p, err := h.planParam(c)
	if err != nil {
		return err
	}
	h.viewAsAPICall(c, "adminGetPlan", nil, c.Param("id"))
	return h.renderAdminPlan(c, http.StatusOK, p, planForm(p))
}

func (h *Handlers) renderAdminPlan(c echo.Context, status int, p queries.Plan, f views.Form) error {
	over, err := h.Billing.OrgsOverLimits(c.Request().Context(), p.ID)
	if err != nil {
		return err
	}
	return render(c, status, views.AdminPlanPage(views.AdminPlan{
		ID: p.ID, Name: p.Name, Form: f, Default: p.IsDefault, Archived: p.ArchivedAt.Valid, Over: over, Currencies: billing.Supported,
	}))
}

// updatePlan is POST /admin/plans/:id.
func (h *Handlers) updatePlan(c echo.Context) error {
	p, err := h.planParam(c)
	if err != nil {
		return err
	}
	f, in := planInput(c)
	_, over, err := h.Billing.UpdatePlan(c.Request().Context(), p.ID, in, actor(c))
	switch {
	case errors.Is(err, billing.ErrPlanNotFound):
		return echo.ErrNotFound
	case err != nil:
		return adminSaveError(c, err, &f, "ErrPlanNotSaved", nil, func(status int) error {
			return h.renderAdminPlan(c, status, p, f)
		})
	case over > 0:
		h.flash(c, "FlashPlanSavedOver")
	default:
		h.flash(c, "FlashPlanSaved")
	}
	return redirect(c, fmt.Sprintf("/admin/plans/%d", p.ID))
}

// setPlanArchived is POST /admin/plans/:id/archive and /unarchive.
func (h *Handlers) setPlanArchived(archived bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := h.planParam(c)
		if err != nil {
			return err
		}
		_, err = h.Billing.SetPlanArchived(c.Request().Context(), p.ID, archived, actor(c))
		switch {
		case errors.Is(err, billing.ErrPlanDefault):
			h.flashError(c, err.Error())
		case errors.Is(err, adminauth.ErrNotAdmin), errors.Is(err, billing.ErrPlanNotFound):
			return echo.ErrNotFound
		case err != nil:
			return err
		case archived:
			h.flash(c, "FlashPlanArchived")
		default:
			h.flash(c, "FlashPlanUnarchived")
		}
		return redirect(c, fmt.Sprintf("/admin/plans/%d", p.ID))
	}
}

// makePlanDefault is POST /admin/plans/:id/default.
func (h *Handlers) makePlanDefault(c echo.Context) error {
	p, err := h.planParam(c)
	if err != nil {
		return err
	}
	_, err = h.Billing.MakeDefault(c.Request().Context(), p.ID, actor(c))
	switch {
	case errors.Is(err, billing.ErrPlanArchived):
		h.flashError(c, err.Error())
	case errors.Is(err, adminauth.ErrNotAdmin), errors.Is(err, billing.ErrPlanNotFound):
		return echo.ErrNotFound
	case err != nil:
		return err
	default:
		h.flash(c, "FlashPlanDefault")
	}
	return redirect(c, fmt.Sprintf("/admin/plans/%d", p.ID))
}
