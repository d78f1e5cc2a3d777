package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/queries"
)

// The plan page's actions: the plans to choose, an order for one, the
// order's cancellation and Stripe checkout, and the paid plan's
// cancellation at the period's end (or its taking back).

// apiPlanOffer is a plan the user may choose, as the plan page offers
// it: its name and description in the key owner's language, its limits,
// and the periods on sale with their price.
type apiPlanOffer struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Current     bool   `json:"current"`
	Default     bool   `json:"default"`
	apiPlanLimits
	Currency string `json:"currency"`
	// Free: the plan costs nothing, and has no prices.
	Free bool `json:"free"`
	// Prices are the periods an order may be for, each with its price in
	// the currency's minor units: a period without a price (or a price of
	// nothing) is not on sale.
	Prices []apiPrice `json:"prices"`
}

type apiPrice struct {
	Period string `json:"period"`
	Amount int64  `json:"amount"`
}

// apiPlanOfferList is one page of the plans to choose, in the admin's
// order.
type apiPlanOfferList struct {
	Plans []apiPlanOffer `json:"plans"`
	Next  string         `json:"next,omitempty"`
}

// listAPIPlans is GET /api/v1/plans: the plans the key's organization may
// choose (the public ones on sale, and its own), a page at a time, for
// any member.
func (h *Handlers) listAPIPlans(c echo.Context) error {
	ctx := c.Request().Context()
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	// The cursor is the id of the page's last plan, read as beforeID
	// reads one: the page after starts after that plan in the admin's
	// order.
	p, after, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	sub, err := h.Billing.SubscriptionOf(ctx, who)
	if err != nil {
		return err
	}
	plans, err := h.Billing.PlansFor(ctx, who, after, int32(p.Limit)+1)
	if err != nil {
		return err
	}
	plans, next := pageOf(plans, p.Limit, func(pl queries.Plan) string { return idCursor(pl.ID) })
	zh := locale.Lang(ctx) == locale.SimplifiedChinese.String()
	out := apiPlanOfferList{Plans: make([]apiPlanOffer, len(plans)), Next: next}
	for i, pl := range plans {
		name, desc := planText(pl, zh)
		out.Plans[i] = apiPlanOffer{
			ID: pl.ID, Name: name, Description: desc, Current: pl.ID == sub.PlanID, Default: pl.IsDefault,
			apiPlanLimits: planLimitsOf(pl), Currency: pl.Currency, Free: pl.Free, Prices: []apiPrice{},
		}
		for _, period := range []billing.Period{billing.Monthly, billing.Yearly} {
			if m, ok := billing.Price(pl, period); ok {
				out.Plans[i].Prices = append(out.Plans[i].Prices, apiPrice{Period: string(period), Amount: m.Minor})
			}
		}
	}
	return c.JSON(http.StatusOK, out)
}

// apiOrderBody is the body of POST /api/v1/orders.
type apiOrderBody struct {
	PlanID *int64 `json:"plan_id"`
	Period string `json:"period"`
	Method string `json:"method"`
}

// apiChoice is what choosing a plan did: result "order" (an order to pay,
// or paid at once when the credit of the current period covers it: see
// its status), "scheduled" (the plan follows at the end of the paid
// period: no order) or "switched" (a free plan, at once: no order).
type apiChoice struct {
	Result string    `json:"result"`
	Order  *apiOrder `json:"order"`
}

// createAPIOrder is POST /api/v1/orders: an owner of the key's
// organization chooses a plan, a period and a payment method for it,
// under the plan page's rules (billing.Choose): 201 with the order and
// its Location, or 200 when the choice needs no order; 422 for a plan,
// period or method that cannot be chosen, 409 for the plan the
// organization has or one in another currency while a period runs; 403
// for a member who is not an owner.
func (h *Handlers) createAPIOrder(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	var body apiOrderBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if body.PlanID == nil {
		return input.Errors{"plan_id": "ErrAPIFieldRequired"}
	}
	ctx := c.Request().Context()
	ch, err := h.Billing.Choose(ctx, who, *body.PlanID, billing.Period(body.Period), body.Method, actor(c))
	switch {
	case errors.Is(err, billing.ErrPlanNotFound), errors.Is(err, billing.ErrPlanUnavailable):
		return input.Errors{"plan_id": err.Error()}
	case errors.Is(err, billing.ErrPeriod), errors.Is(err, billing.ErrPeriodNotOffered):
		return input.Errors{"period": err.Error()}
	case errors.Is(err, billing.ErrMethod):
		return input.Errors{"method": err.Error()}
	case errors.Is(err, billing.ErrSamePlan), errors.Is(err, billing.ErrCurrencyChange):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	case err != nil:
		return err
	case ch.Scheduled:
		return c.JSON(http.StatusOK, apiChoice{Result: "scheduled"})
	case ch.Switched:
		return c.JSON(http.StatusOK, apiChoice{Result: "switched"})
	}
	o, err := h.apiOrderWithPlan(c, ch.Order)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/api/v1/orders/%d", o.ID))
	return c.JSON(http.StatusCreated, apiChoice{Result: "order", Order: &o})
}

// apiOrderWithPlan is the order as the API shows it, with its plan's name
// and, pending and paid by hand, the admin's payment instructions.
func (h *Handlers) apiOrderWithPlan(c echo.Context, o queries.Order) (apiOrder, error) {
	ctx := c.Request().Context()
	plan, err := h.Billing.Plan(ctx, o.PlanID)
	if err != nil {
		return apiOrder{}, err
	}
	out := apiOrderOf(o, plan.Name)
	if o.Status == billing.OrderPending && o.Method == billing.MethodManual {
		st, err := h.Billing.Settings(ctx)
		if err != nil {
			return apiOrder{}, err
		}
		out.Instructions = st.ManualInstructions
	}
	return out, nil
}

// showAPIOrder is GET /api/v1/orders/{id}: one of the orders of the key's
// organization, for its owners.
func (h *Handlers) showAPIOrder(c echo.Context) error {
	o, err := h.ownOrder(c)
	if err != nil {
		return err
	}
	return h.answerOrder(c, o.Order)
}

func (h *Handlers) answerOrder(c echo.Context, o queries.Order) error {
	out, err := h.apiOrderWithPlan(c, o)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// cancelAPIOrder is POST /api/v1/orders/{id}/cancel: a pending order is
// cancelled; 409 for one paid or closed already.
func (h *Handlers) cancelAPIOrder(c echo.Context) error {
	o, err := h.ownOrder(c)
	if err != nil {
		return err
	}
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	_, err = h.Billing.CancelOrder(ctx, who, o.Order.ID, actor(c))
	if errors.Is(err, billing.ErrOrderClosed) || errors.Is(err, billing.ErrAlreadyPaid) {
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	}
	if err != nil {
		return err
	}
	if o, err = h.Billing.OrderOf(ctx, who, o.Order.ID); err != nil {
		return err
	}
	return h.answerOrder(c, o.Order)
}

// apiCheckout is where to send the buyer of a Stripe order.
type apiCheckout struct {
	URL string `json:"url"`
}

// checkoutAPIOrder is POST /api/v1/orders/{id}/checkout: a Stripe
// Checkout Session for a pending Stripe order (the one it has while it is
// open), as the console's Pay now; 200 with its URL, which the buyer
// opens and leaves for the order's page. 409 for an order closed or not
// paid by Stripe, 502 when Stripe did not answer or refused.
func (h *Handlers) checkoutAPIOrder(c echo.Context) error {
	o, err := h.ownOrder(c)
	if err != nil {
		return err
	}
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	u, _ := currentUser(c)
	to, err := h.Billing.Checkout(c.Request().Context(), who, o.Order.ID, u.Email, h.BaseURL+orderPagePath(o.Order.ID))
	switch {
	case errors.Is(err, billing.ErrStripe):
		return echo.NewHTTPError(http.StatusBadGateway, billing.ErrStripe.Error()).SetInternal(err)
	case errors.Is(err, billing.ErrOrderClosed), errors.Is(err, billing.ErrMethod):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, apiCheckout{URL: to})
}

// orderPagePath is an order's console page, where Stripe sends the buyer
// back.
func orderPagePath(id int64) string {
	return "/billing/orders/" + strconv.FormatInt(id, 10)
}

// setAPIBillingCancel is POST /api/v1/billing/cancel (cancel) and
// /api/v1/billing/resume: the paid plan of the key's organization ends
// at the period's end, or renews; 200 with the billing as GET
// /api/v1/billing answers it, 409 without a paid period, 403 for a member
// who is not an owner.
func (h *Handlers) setAPIBillingCancel(cancel bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		who, err := h.acting(c)
		if err != nil {
			return err
		}
		err = h.Billing.SetCancel(c.Request().Context(), who, cancel, actor(c))
		if errors.Is(err, billing.ErrNoPeriod) {
			return echo.NewHTTPError(http.StatusConflict, err.Error())
		}
		if err != nil {
			return err
		}
		return h.showAPIBilling(c)
	}
}
