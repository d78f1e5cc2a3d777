package handlers

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/queries"
)

// The admin API's plans (/api/v1/admin/plans...): what admin_plans.go does
// in the back office, with the same service. Prices are in the currency's
// minor units, as in the user API.

// apiAdminPlan is a plan as the admin API shows it: the user API's, with
// what only admins see.
type apiAdminPlan struct {
	apiPlan
	NameZh        string `json:"name_zh"`
	DescriptionEn string `json:"description_en"`
	DescriptionZh string `json:"description_zh"`
	// Public plans are offered to users; others are given by admins.
	Public    bool  `json:"public"`
	SortOrder int32 `json:"sort_order"`
	// Backends are the control-plane backends its clusters may run on;
	// none: the platform's default one.
	Backends   []string   `json:"backends"`
	ArchivedAt *time.Time `json:"archived_at"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	// UsersOverLimits counts its subscribers, organizations since issue
	// 38 (the name is kept for the API's clients), that use more than it
	// allows (in the answers about one plan, not in lists).
	UsersOverLimits *int64 `json:"users_over_limits,omitempty"`
}

func apiAdminPlanOf(p queries.Plan) apiAdminPlan {
	return apiAdminPlan{
		apiPlan: apiPlanOf(p), NameZh: p.NameZh, DescriptionEn: p.DescriptionEn, DescriptionZh: p.DescriptionZh,
		Public: p.Public, SortOrder: p.SortOrder, Backends: append([]string{}, p.Backends...),
		ArchivedAt: optionalTime(p.ArchivedAt), CreatedAt: p.CreatedAt.Time.UTC(), UpdatedAt: p.UpdatedAt.Time.UTC(),
	}
}

// apiAdminPlanList is one page of plans, in id order (api_page.go).
type apiAdminPlanList struct {
	Plans []apiAdminPlan `json:"plans"`
	Next  string         `json:"next,omitempty"`
}

// apiPlanBody is the body of POST and PATCH: PATCH changes only the
// fields present; POST starts from newPlan's. A price is in the plan's
// currency's minor units, null for a period not on sale.
type apiPlanBody struct {
	Name                   *string       `json:"name"`
	NameZh                 *string       `json:"name_zh"`
	DescriptionEn          *string       `json:"description_en"`
	DescriptionZh          *string       `json:"description_zh"`
	MaxClusters            *int32        `json:"max_clusters"`
	MaxNodesPerCluster     *int32        `json:"max_nodes_per_cluster"`
	MaxHostnamesPerCluster *int32        `json:"max_hostnames_per_cluster"`
	ManagedIngress         *bool         `json:"managed_ingress"`
	Currency               *string       `json:"currency"`
	Free                   *bool         `json:"free"`
	PriceMonthly           apiPriceInput `json:"price_monthly"`
	PriceYearly            apiPriceInput `json:"price_yearly"`
	Public                 *bool         `json:"public"`
	SortOrder              *int32        `json:"sort_order"`
	Backends               *[]string     `json:"backends"`
}

// apiPriceInput is a price of a body: Set when the field is there, Minor nil
// when it is null.
type apiPriceInput struct {
	Set   bool
	Minor *int64
}

func (p *apiPriceInput) UnmarshalJSON(b []byte) error {
	p.Set = true
	if string(b) == "null" {
		return nil
	}
	p.Minor = new(int64)
	return json.Unmarshal(b, p.Minor)
}

// decimal is the price as billing.PlanInput takes it, in the currency's
// major units ("" for none): the body's when it has the field, else the
// stored one.
func (p apiPriceInput) decimal(stored pgtype.Int8, currency string) string {
	if p.Set {
		stored = pgtype.Int8{}
		if p.Minor != nil {
			stored = pgtype.Int8{Int64: *p.Minor, Valid: true}
		}
	}
	if !stored.Valid {
		return ""
	}
	return billing.Money{Minor: stored.Int64, Currency: currency}.Decimal()
}

// input is base, a stored plan or newPlan, with the body's changes, as
// the service takes a plan.
func (b apiPlanBody) input(base queries.Plan) billing.PlanInput {
	in := billing.PlanInput{
		Name: valueOr(b.Name, base.Name), NameZh: valueOr(b.NameZh, base.NameZh),
		DescriptionEn: valueOr(b.DescriptionEn, base.DescriptionEn), DescriptionZh: valueOr(b.DescriptionZh, base.DescriptionZh),
		MaxClusters: valueOr(b.MaxClusters, base.MaxClusters), MaxNodesPerCluster: valueOr(b.MaxNodesPerCluster, base.MaxNodesPerCluster),
		MaxHostnamesPerCluster: valueOr(b.MaxHostnamesPerCluster, base.MaxHostnamesPerCluster),
		IngressAllowed:         valueOr(b.ManagedIngress, base.IngressAllowed),
		Currency:               valueOr(b.Currency, base.Currency), Free: valueOr(b.Free, base.Free),
		Public: valueOr(b.Public, base.Public), SortOrder: valueOr(b.SortOrder, base.SortOrder),
		Backends: valueOr(b.Backends, base.Backends),
	}
	in.PriceMonthly = b.PriceMonthly.decimal(base.PriceMonthly, in.Currency)
	in.PriceYearly = b.PriceYearly.decimal(base.PriceYearly, in.Currency)
	return in
}

// listAPIAdminPlans is GET /api/v1/admin/plans: every plan, archived ones
// too, in id order, a page at a time. Plans are few (the back office
// lists them all on one page): they are read whole and paged here.
func (h *Handlers) listAPIAdminPlans(c echo.Context) error {
	// The cursor is an id, the one the page goes on above.
	p, after, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	plans, err := h.Billing.Plans(c.Request().Context())
	if err != nil {
		return err
	}
	slices.SortFunc(plans, func(a, b queries.Plan) int { return cmp.Compare(a.ID, b.ID) })
	plans = slices.DeleteFunc(plans, func(p queries.Plan) bool { return p.ID <= after })
	plans, next := pageOf(plans, p.Limit, func(p queries.Plan) string { return idCursor(p.ID) })
	out := apiAdminPlanList{Plans: make([]apiAdminPlan, len(plans)), Next: next}
	for i, pl := range plans {
		out.Plans[i] = apiAdminPlanOf(pl)
	}
	return c.JSON(http.StatusOK, out)
}

// createAPIAdminPlan is POST /api/v1/admin/plans: 201 with the plan and
// its Location.
func (h *Handlers) createAPIAdminPlan(c echo.Context) error {
	var body apiPlanBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	p, err := h.Billing.CreatePlan(c.Request().Context(), body.input(newPlan), actor(c))
	if err != nil {
		return apiAdminPlanError(err)
	}
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/api/v1/admin/plans/%d", p.ID))
	return h.answerAPIAdminPlan(c, http.StatusCreated, p)
}

// apiAdminPlanParam is the path's plan; 404 for one that does not exist.
func (h *Handlers) apiAdminPlanParam(c echo.Context) (queries.Plan, error) {
	p, err := h.planParam(c)
	if errors.Is(err, echo.ErrNotFound) {
		return p, errAdminPlanNotFound
	}
	return p, err
}

// errAdminPlanNotFound is a plan that does not exist.
var errAdminPlanNotFound = echo.NewHTTPError(http.StatusNotFound, billing.ErrPlanNotFound.Error())

// showAPIAdminPlan is GET /api/v1/admin/plans/:id.
func (h *Handlers) showAPIAdminPlan(c echo.Context) error {
	p, err := h.apiAdminPlanParam(c)
	if err != nil {
		return err
	}
	return h.answerAPIAdminPlan(c, http.StatusOK, p)
}

// answerAPIAdminPlan answers with p and how many of its users are over
// its limits, and p's entity tag (billing.PlanTag) for a PATCH's If-Match.
func (h *Handlers) answerAPIAdminPlan(c echo.Context, status int, p queries.Plan) error {
	over, err := h.Billing.OrgsOverLimits(c.Request().Context(), p.ID)
	if err != nil {
		return err
	}
	out := apiAdminPlanOf(p)
	out.UsersOverLimits = &over
	tag, err := billing.PlanTag(p)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", tag)
	return c.JSON(status, out)
}

// updateAPIAdminPlan is PATCH /api/v1/admin/plans/:id: the fields present
// change. Lowering a limit below what subscribers use is allowed, as in
// the back office: users_over_limits says how many it leaves over.
func (h *Handlers) updateAPIAdminPlan(c echo.Context) error {
	p, err := h.apiAdminPlanParam(c)
	if err != nil {
		return err
	}
	var body apiPlanBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	p, _, err = h.Billing.UpdatePlan(c.Request().Context(), p.ID, body.input(p), actor(c))
	if err != nil {
		return apiAdminPlanError(err)
	}
	return h.answerAPIAdminPlan(c, http.StatusOK, p)
}

// changeAPIAdminPlan is POST /api/v1/admin/plans/:id/<action> (archive,
// unarchive, default): change runs on the plan, which is the answer. The
// default plan cannot be archived, nor an archived plan be the default
// (409).
func (h *Handlers) changeAPIAdminPlan(change func(c echo.Context, id int64) (queries.Plan, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := h.apiAdminPlanParam(c)
		if err != nil {
			return err
		}
		if p, err = change(c, p.ID); err != nil {
			return apiAdminPlanError(err)
		}
		return h.answerAPIAdminPlan(c, http.StatusOK, p)
	}
}

// archiveAPIAdminPlan archives a plan (archived) or brings it back.
func (h *Handlers) archiveAPIAdminPlan(archived bool) func(c echo.Context, id int64) (queries.Plan, error) {
	return func(c echo.Context, id int64) (queries.Plan, error) {
		return h.Billing.SetPlanArchived(c.Request().Context(), id, archived, actor(c))
	}
}

// defaultAPIAdminPlan makes a plan the default.
func (h *Handlers) defaultAPIAdminPlan(c echo.Context, id int64) (queries.Plan, error) {
	return h.Billing.MakeDefault(c.Request().Context(), id, actor(c))
}

// apiAdminPlanError answers a plan action's refusal; field errors
// (input.Errors) are 422 as they are.
func apiAdminPlanError(err error) error {
	switch {
	case errors.Is(err, billing.ErrPlanNotFound), errors.Is(err, adminauth.ErrNotAdmin):
		return errAdminPlanNotFound
	case errors.Is(err, billing.ErrPlanDefault), errors.Is(err, billing.ErrPlanArchived):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	}
	return err
}
