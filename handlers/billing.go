package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// ordersShown is how many of an organization's orders the plan page
// lists, newest first.
const ordersShown = 50

// showBillingPage is GET /billing: the current organization's plan and
// its usage against its limits, the period, the plans to choose, its
// orders. Every member reads the plan and the usage; the owners alone
// (orgs.Billing) are offered to order, pay and cancel, and see the orders:
// the others read that only the owners may.
func (h *Handlers) showBillingPage(c echo.Context) error {
	return h.renderBilling(c, http.StatusOK, "")
}

func (h *Handlers) renderBilling(c echo.Context, status int, errMsg string) error {
	ctx := c.Request().Context()
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	use, err := h.Billing.UsageOf(ctx, who)
	if err != nil {
		return err
	}
	sub := use.Subscription
	st, err := h.Billing.Settings(ctx)
	if err != nil {
		return err
	}
	p := use.Plan
	zh := locale.Lang(ctx) == locale.SimplifiedChinese.String()
	name, desc := planText(p, zh)
	m := views.Billing{
		PlanName: name, Description: desc, Default: p.IsDefault, Ingress: p.IngressAllowed,
		Limits: []views.BillingLimit{
			{Key: "clusters", LabelID: "BillingLimitClusters", Used: use.Clusters, Max: int64(p.MaxClusters)},
			{Key: "nodes", LabelID: "BillingLimitNodes", Used: use.MostNodes, Max: int64(p.MaxNodesPerCluster)},
			{Key: "hostnames", LabelID: "BillingLimitHostnames", Used: use.MostHostnames, Max: int64(p.MaxHostnamesPerCluster)},
		},
		Status: sub.Status, Period: sub.Period.String, CancelAtEnd: sub.CancelAtPeriodEnd, Scheduled: sub.ScheduledPlan,
		Methods: st.Methods, Error: errMsg, Manage: who.May(orgs.Billing),
	}
	if !sub.Personal {
		m.OrgName = sub.OrgName
	}
	if sub.CurrentPeriodEnd.Valid {
		m.PeriodEnd = sub.CurrentPeriodEnd.Time
		m.GraceUntil = m.PeriodEnd.Add(st.Grace())
	}
	plans, err := h.Billing.PlansFor(ctx, who, 0, 0)
	if err != nil {
		return err
	}
	for _, pl := range plans {
		n, d := planText(pl, zh)
		m.Plans = append(m.Plans, views.BillingPlanCard{
			ID: pl.ID, Name: n, Description: d, Clusters: pl.MaxClusters, Nodes: pl.MaxNodesPerCluster,
			Hostnames: pl.MaxHostnamesPerCluster, Ingress: pl.IngressAllowed, Prices: planPrices(pl),
			Current: pl.ID == p.ID,
		})
	}
	if m.Manage {
		orders, err := h.Billing.OrdersOf(ctx, who, 0, ordersShown)
		if err != nil {
			return err
		}
		for _, o := range orders {
			v := orderView(o.Order, o.PlanName)
			m.Orders = append(m.Orders, v)
			if o.Order.Status == billing.OrderPending {
				m.Pending = &v
			}
		}
	}
	h.viewAsAPICall(c, "getBilling", nil)
	return render(c, status, views.BillingPage(m))
}

// planText is a plan's name and description in the reader's language.
func planText(p queries.Plan, zh bool) (name, desc string) {
	name, desc = p.Name, p.DescriptionEn
	if zh && p.NameZh != "" {
		name = p.NameZh
	}
	if zh && p.DescriptionZh != "" {
		desc = p.DescriptionZh
	}
	return name, desc
}

// planPrices are a plan's prices as the pages show them.
func planPrices(p queries.Plan) views.PlanPrices {
	out := views.PlanPrices{Free: p.Free}
	if m, ok := billing.Price(p, billing.Monthly); ok {
		out.Monthly = m.String()
	}
	if y, ok := billing.Price(p, billing.Yearly); ok {
		out.Yearly = y.String()
	}
	return out
}

// orderView is an order as the pages show it.
func orderView(o queries.Order, plan string) views.BillingOrder {
	money := func(minor int64) string { return billing.Money{Minor: minor, Currency: o.Currency}.String() }
	return views.BillingOrder{
		ID: o.ID, Number: o.Number, Plan: plan, Period: o.Period, Kind: o.Kind, Status: o.Status, Method: o.Method,
		Amount: money(o.Amount), Credit: money(o.Credit), Tax: money(o.Tax), Total: money(o.Total), TaxLabel: o.TaxLabel,
		Refunded: money(o.RefundedAmount), HasCredit: o.Credit > 0, HasTax: o.TaxLabel != "", Refund: o.RefundedAmount > 0,
		Created: o.CreatedAt.Time, Expires: o.ExpiresAt.Time, Paid: o.PaidAt.Time,
		PeriodStart: o.PeriodStart.Time, PeriodEnd: o.PeriodEnd.Time,
	}
}

// chooseBillingPlan is POST /billing/orders: an owner picks a plan and a
// period (and a payment method) for the current organization: an order
// to pay, or a change at the period's end or at once, said in a flash.
// Another member is refused (403).
func (h *Handlers) chooseBillingPlan(c echo.Context) error {
	ctx := c.Request().Context()
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	planID, err := strconv.ParseInt(c.FormValue("plan_id"), 10, 64)
	if err != nil {
		return h.renderBilling(c, http.StatusUnprocessableEntity, locale.T(ctx, billing.ErrPlanNotFound.Error()))
	}
	ch, err := h.Billing.Choose(ctx, who, planID, billing.Period(c.FormValue("period")), c.FormValue("method"), actor(c))
	switch {
	case errors.Is(err, billing.ErrPlanNotFound), errors.Is(err, billing.ErrPlanUnavailable), errors.Is(err, billing.ErrMethod),
		errors.Is(err, billing.ErrCurrencyChange), errors.Is(err, billing.ErrSamePlan), errors.Is(err, billing.ErrPeriod),
		errors.Is(err, billing.ErrPeriodNotOffered):
		return h.renderBilling(c, http.StatusUnprocessableEntity, locale.T(ctx, err.Error()))
	case err != nil:
		return err
	case ch.Scheduled:
		h.flash(c, "FlashBillingScheduled")
		return redirect(c, "/billing")
	case ch.Switched:
		h.flash(c, "FlashBillingSwitched")
		return redirect(c, "/billing")
	}
	if ch.Order.Method == billing.MethodStripe && ch.Order.Status == billing.OrderPending {
		return h.checkout(c, ch.Order.ID)
	}
	return redirect(c, fmt.Sprintf("/billing/orders/%d", ch.Order.ID))
}

// ownOrder is the order in the path if it is the current organization's,
// for its owners (billing.OrderOf); any other (another organization's,
// none) is the same 404, and one of the organization's, for a member who
// is not an owner, 403.
func (h *Handlers) ownOrder(c echo.Context) (queries.OrderGetForMemberRow, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return queries.OrderGetForMemberRow{}, echo.ErrNotFound
	}
	who, err := h.acting(c)
	if err != nil {
		return queries.OrderGetForMemberRow{}, err
	}
	o, err := h.Billing.OrderOf(c.Request().Context(), who, id)
	if errors.Is(err, billing.ErrOrderNotFound) {
		return o, echo.ErrNotFound
	}
	return o, err
}

// orderPageView is an order with its plan's name and, pending and
// manual, the admin's instructions; on a receipt, seller and buyer: who
// placed it, and the organization it is for unless that is their
// personal one.
func (h *Handlers) orderPageView(c echo.Context, row queries.OrderGetForMemberRow) (views.BillingOrder, error) {
	o := row.Order
	ctx := c.Request().Context()
	plan, err := h.Billing.Plan(ctx, o.PlanID)
	if err != nil {
		return views.BillingOrder{}, err
	}
	st, err := h.Billing.Settings(ctx)
	if err != nil {
		return views.BillingOrder{}, err
	}
	name, _ := planText(plan, locale.Lang(ctx) == locale.SimplifiedChinese.String())
	v := orderView(o, name)
	v.Instructions = st.ManualInstructions
	v.SellerName, v.SellerAddress, v.SellerTaxID = st.SellerName, st.SellerAddress, st.SellerTaxID
	v.Buyer = row.PlacedByEmail
	if row.PlacedByName != "" && row.PlacedByName != row.PlacedByEmail {
		v.Buyer = row.PlacedByName + " <" + row.PlacedByEmail + ">"
	}
	if !row.OrgPersonal {
		v.BuyerOrg = row.OrgName
	}
	return v, nil
}

// showBillingOrder is GET /billing/orders/:id.
func (h *Handlers) showBillingOrder(c echo.Context) error {
	o, err := h.ownOrder(c)
	if err != nil {
		return err
	}
	v, err := h.orderPageView(c, o)
	if err != nil {
		return err
	}
	v.Returned = c.QueryParam("checkout") == "done"
	h.viewAsAPICall(c, "getOrder", nil, c.Param("id"))
	return render(c, http.StatusOK, views.BillingOrderPage(v))
}

// showBillingReceipt is GET /billing/orders/:id/receipt: a paid order's
// printable receipt; 404 before it is paid.
func (h *Handlers) showBillingReceipt(c echo.Context) error {
	o, err := h.ownOrder(c)
	if err != nil {
		return err
	}
	if !o.Order.PaidAt.Valid {
		return echo.ErrNotFound
	}
	v, err := h.orderPageView(c, o)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.BillingReceiptPage(v))
}

// cancelBillingOrder is POST /billing/orders/:id/cancel.
func (h *Handlers) cancelBillingOrder(c echo.Context) error {
	o, err := h.ownOrder(c)
	if err != nil {
		return err
	}
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	_, err = h.Billing.CancelOrder(c.Request().Context(), who, o.Order.ID, actor(c))
	switch {
	case errors.Is(err, billing.ErrOrderClosed), errors.Is(err, billing.ErrAlreadyPaid):
		h.flashError(c, err.Error())
	case err != nil:
		return err
	default:
		h.flash(c, "FlashBillingOrderCancelled")
	}
	return redirect(c, "/billing")
}

// setBillingCancel is POST /billing/cancel (cancel=true) and
// /billing/resume: the current organization's paid plan ends at the
// period's end, or renews; for its owners.
func (h *Handlers) setBillingCancel(cancel bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		who, err := h.acting(c)
		if err != nil {
			return err
		}
		err = h.Billing.SetCancel(c.Request().Context(), who, cancel, actor(c))
		switch {
		case errors.Is(err, billing.ErrNoPeriod):
			h.flashError(c, err.Error())
		case err != nil:
			return err
		case cancel:
			h.flash(c, "FlashBillingCancelled")
		default:
			h.flash(c, "FlashBillingResumed")
		}
		return redirect(c, "/billing")
	}
}

// apiBilling is GET /api/v1/billing.
type apiBilling struct {
	Plan         apiPlan         `json:"plan"`
	Usage        apiUsage        `json:"usage"`
	Subscription apiSubscription `json:"subscription"`
}

type apiPlan struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Default bool   `json:"default"`
	apiPlanLimits
	Currency string `json:"currency"`
	// Free: the plan costs nothing. Prices in the currency's minor units,
	// null for a period not on sale.
	Free         bool   `json:"free"`
	PriceMonthly *int64 `json:"price_monthly"`
	PriceYearly  *int64 `json:"price_yearly"`
}

// apiPlanLimits are a plan's limits as the API shows them.
type apiPlanLimits struct {
	MaxClusters            int32 `json:"max_clusters"`
	MaxNodesPerCluster     int32 `json:"max_nodes_per_cluster"`
	MaxHostnamesPerCluster int32 `json:"max_hostnames_per_cluster"`
	ManagedIngress         bool  `json:"managed_ingress"`
}

func planLimitsOf(p queries.Plan) apiPlanLimits {
	return apiPlanLimits{
		MaxClusters: p.MaxClusters, MaxNodesPerCluster: p.MaxNodesPerCluster,
		MaxHostnamesPerCluster: p.MaxHostnamesPerCluster, ManagedIngress: p.IngressAllowed,
	}
}

type apiUsage struct {
	Clusters int64 `json:"clusters"`
	// The most nodes and host names in any one cluster.
	MostNodesInACluster     int64 `json:"most_nodes_in_a_cluster"`
	MostHostnamesInACluster int64 `json:"most_hostnames_in_a_cluster"`
}

type apiSubscription struct {
	Status string `json:"status"`
	// Period and PeriodEnd are empty and null without a paid period.
	Period            string     `json:"period"`
	PeriodEnd         *time.Time `json:"period_end"`
	CancelAtPeriodEnd bool       `json:"cancel_at_period_end"`
	ScheduledPlan     string     `json:"scheduled_plan"`
}

// showAPIBilling is GET /api/v1/billing: the plan of the key's
// organization, its limits, its usage and its subscription, for any
// member.
func (h *Handlers) showAPIBilling(c echo.Context) error {
	ctx := c.Request().Context()
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	use, err := h.Billing.UsageOf(ctx, who)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiBilling{
		Plan:         apiPlanOf(use.Plan),
		Usage:        apiUsage{Clusters: use.Clusters, MostNodesInACluster: use.MostNodes, MostHostnamesInACluster: use.MostHostnames},
		Subscription: apiSubscriptionOf(use.Subscription),
	})
}

// apiPlanOf is a plan as the API shows it to its users.
func apiPlanOf(p queries.Plan) apiPlan {
	return apiPlan{
		ID: p.ID, Name: p.Name, Default: p.IsDefault, apiPlanLimits: planLimitsOf(p),
		Currency: p.Currency, Free: p.Free, PriceMonthly: price(p.PriceMonthly), PriceYearly: price(p.PriceYearly),
	}
}

// apiSubscriptionOf is a subscription as the API shows it to its user.
func apiSubscriptionOf(sub billing.Subscription) apiSubscription {
	return apiSubscription{
		Status: sub.Status, Period: sub.Period.String, PeriodEnd: optionalTime(sub.CurrentPeriodEnd),
		CancelAtPeriodEnd: sub.CancelAtPeriodEnd, ScheduledPlan: sub.ScheduledPlan,
	}
}

// price is a plan's price for the API: null for a period not on sale.
func price(p pgtype.Int8) *int64 {
	if !p.Valid {
		return nil
	}
	return &p.Int64
}

// apiOrder is one order in GET /api/v1/orders: amounts in the currency's
// minor units.
type apiOrder struct {
	ID          int64      `json:"id"`
	Number      string     `json:"number"`
	Plan        string     `json:"plan"`
	Period      string     `json:"period"`
	Kind        string     `json:"kind"`
	Status      string     `json:"status"`
	Method      string     `json:"method"`
	Currency    string     `json:"currency"`
	Amount      int64      `json:"amount"`
	Credit      int64      `json:"credit"`
	Tax         int64      `json:"tax"`
	Total       int64      `json:"total"`
	Refunded    int64      `json:"refunded"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   time.Time  `json:"expires_at"`
	PaidAt      *time.Time `json:"paid_at"`
	PeriodStart *time.Time `json:"period_start"`
	PeriodEnd   *time.Time `json:"period_end"`
	// Instructions are how to pay a pending order paid by hand, in the
	// answers about one order.
	Instructions string `json:"instructions,omitempty"`
}

// apiOrderList is one page of orders, newest first (api_page.go).
type apiOrderList struct {
	Orders []apiOrder `json:"orders"`
	Next   string     `json:"next,omitempty"`
}

// listAPIOrders is GET /api/v1/orders: the orders of the key's
// organization, newest first, a page at a time; for its owners (403 for
// another member).
func (h *Handlers) listAPIOrders(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	out, next, err := idPage(c, func(before int64, limit int32) ([]queries.OrderListForMemberRow, error) {
		return h.Billing.OrdersOf(c.Request().Context(), who, before, limit)
	}, func(r queries.OrderListForMemberRow) int64 { return r.Order.ID },
		func(r queries.OrderListForMemberRow) apiOrder { return apiOrderOf(r.Order, r.PlanName) })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiOrderList{Orders: out, Next: next})
}

// apiOrderOf is an order of the plan called plan as the API shows it.
func apiOrderOf(o queries.Order, plan string) apiOrder {
	return apiOrder{
		ID: o.ID, Number: o.Number, Plan: plan, Period: o.Period, Kind: o.Kind, Status: o.Status, Method: o.Method,
		Currency: o.Currency, Amount: o.Amount, Credit: o.Credit, Tax: o.Tax, Total: o.Total, Refunded: o.RefundedAmount,
		CreatedAt: o.CreatedAt.Time.UTC(), ExpiresAt: o.ExpiresAt.Time.UTC(), PaidAt: optionalTime(o.PaidAt),
		PeriodStart: optionalTime(o.PeriodStart), PeriodEnd: optionalTime(o.PeriodEnd),
	}
}
