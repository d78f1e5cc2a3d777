package handlers

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// The admin API's orders (GET /api/v1/admin/orders...) and a user's
// subscription, their personal organization's
// (/api/v1/admin/users/:id/subscription...; an organization's is in
// api_admin_orgs.go): what admin_billing.go does in the back office, with
// the same services. Amounts are in the
// currency's minor units, as in the user API.

// apiAdminOrder is any order as the admin API lists it: the organization
// it is for, and who placed it (the user).
type apiAdminOrder struct {
	apiOrder
	OrgID     int64  `json:"org_id"`
	OrgName   string `json:"org_name"`
	UserID    int64  `json:"user_id"`
	UserEmail string `json:"user_email"`
	// Reference is the payment's: a bank transfer's or an invoice's
	// (manual), Stripe's payment (stripe).
	Reference string     `json:"reference"`
	TaxLabel  string     `json:"tax_label"`
	ClosedAt  *time.Time `json:"closed_at"`
}

func apiAdminOrderOf(o queries.Order, plan, org, email string) apiAdminOrder {
	return apiAdminOrder{
		apiOrder: apiOrderOf(o, plan), OrgID: o.OrgID, OrgName: org, UserID: o.UserID, UserEmail: email,
		Reference: o.Reference, TaxLabel: o.TaxLabel, ClosedAt: optionalTime(o.ClosedAt),
	}
}

// apiAdminOrderList is one page of orders, newest first (api_page.go).
type apiAdminOrderList struct {
	Orders []apiAdminOrder `json:"orders"`
	Next   string          `json:"next,omitempty"`
}

// apiAdminOrderDetail is an order with its history.
type apiAdminOrderDetail struct {
	apiAdminOrder
	Events []apiOrderEvent `json:"events"`
}

// apiOrderEvent is a step of an order's history: created, paid, refund,
// cancelled, expired.
type apiOrderEvent struct {
	Kind      string    `json:"kind"`
	CreatedAt time.Time `json:"created_at"`
	// ActorID is null for the platform's own doings (Stripe, expiry).
	ActorID    *int64          `json:"actor_id"`
	ActorEmail string          `json:"actor_email"`
	Detail     json.RawMessage `json:"detail"`
}

// listAPIAdminOrders is GET /api/v1/admin/orders: every organization's orders,
// newest first, a page at a time, with the back office's filters (status,
// method, email, number, from, to). A status or method that is none is
// 422, where the back office shows every order.
func (h *Handlers) listAPIAdminOrders(c echo.Context) error {
	p, before, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	fe := input.Errors{}
	if s := strings.TrimSpace(c.QueryParam("status")); s != "" && !slices.Contains(orderStatuses, s) {
		fe["status"] = "ErrAPIAdminOrderStatus"
	}
	if m := strings.TrimSpace(c.QueryParam("method")); m != "" && !slices.Contains(orderMethods, m) {
		fe["method"] = "ErrAPIAdminOrderMethod"
	}
	f, params := orderFilter(c)
	maps.Copy(fe, f.Errors)
	if len(fe) > 0 {
		return fe
	}
	params.Before, params.MaxRows = before, int32(p.Limit)+1
	rows, err := h.Billing.AdminOrders(c.Request().Context(), params)
	if err != nil {
		return err
	}
	rows, next := pageOf(rows, p.Limit, func(r queries.OrderListAdminRow) string { return idCursor(r.Order.ID) })
	out := apiAdminOrderList{Orders: make([]apiAdminOrder, len(rows)), Next: next}
	for i, r := range rows {
		out.Orders[i] = apiAdminOrderOf(r.Order, r.PlanName, r.OrgName, r.UserEmail)
	}
	return c.JSON(http.StatusOK, out)
}

// showAPIAdminOrder is GET /api/v1/admin/orders/:id.
func (h *Handlers) showAPIAdminOrder(c echo.Context) error {
	id, err := pathID(c, "id", errAdminOrderNotFound)
	if err != nil {
		return err
	}
	return h.answerAPIAdminOrder(c, id)
}

// errAdminOrderNotFound is an order that does not exist.
var errAdminOrderNotFound = echo.NewHTTPError(http.StatusNotFound, billing.ErrOrderNotFound.Error())

// answerAPIAdminOrder answers with the order id as it is now.
func (h *Handlers) answerAPIAdminOrder(c echo.Context, id int64) error {
	d, err := h.Billing.AdminOrder(c.Request().Context(), id)
	if errors.Is(err, billing.ErrOrderNotFound) {
		return errAdminOrderNotFound
	}
	if err != nil {
		return err
	}
	out := apiAdminOrderDetail{apiAdminOrder: apiAdminOrderOf(d.Order, d.Plan.Name, d.Org.Name, d.User.Email), Events: make([]apiOrderEvent, len(d.Events))}
	for i, e := range d.Events {
		out.Events[i] = apiOrderEvent{Kind: e.Kind, CreatedAt: e.CreatedAt.Time.UTC(), ActorEmail: e.ActorEmail, Detail: jsonObject(e.Detail)}
		if e.ActorID.Valid {
			out.Events[i].ActorID = &e.ActorID.Int64
		}
	}
	return c.JSON(http.StatusOK, out)
}

// jsonObject is a JSON object stored as jsonb, {} for none.
func jsonObject(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}

// changeAPIAdminOrder runs an action on the path's order, with the body
// read into body (nil: none), and answers with the order.
func (h *Handlers) changeAPIAdminOrder(c echo.Context, body any, run func(id int64) error) error {
	id, err := pathID(c, "id", errAdminOrderNotFound)
	if err != nil {
		return err
	}
	return h.changeAPIAdmin(c, id, body, run, h.answerAPIAdminOrder)
}

// changeAPIAdmin reads the body into body (nil: none), runs run on id and
// answers as answer does, or with run's refusal (apiAdminBillingError).
func (h *Handlers) changeAPIAdmin(c echo.Context, id int64, body any, run func(id int64) error, answer func(echo.Context, int64) error) error {
	if body != nil {
		if err := decodeJSON(c, body); err != nil {
			return err
		}
	}
	if err := run(id); err != nil {
		return apiAdminBillingError(err)
	}
	return answer(c, id)
}

// markAPIAdminOrderPaid is POST /api/v1/admin/orders/:id/paid: an admin
// received a manual order's money, with the payment's reference.
func (h *Handlers) markAPIAdminOrderPaid(c echo.Context) error {
	var body struct {
		Reference string `json:"reference"`
	}
	return h.changeAPIAdminOrder(c, &body, func(id int64) error {
		_, err := h.Billing.MarkPaid(c.Request().Context(), id, body.Reference, actor(c))
		return err
	})
}

// cancelAPIAdminOrder is POST /api/v1/admin/orders/:id/cancel: a pending
// order will not be paid.
func (h *Handlers) cancelAPIAdminOrder(c echo.Context) error {
	return h.changeAPIAdminOrder(c, nil, func(id int64) error {
		_, err := h.Billing.AdminCancelOrder(c.Request().Context(), id, actor(c))
		return err
	})
}

// refundAPIAdminOrder is POST /api/v1/admin/orders/:id/refund: an amount
// of a paid order, at most what was paid and not refunded yet, given back
// for a reason (through Stripe for a Stripe order).
func (h *Handlers) refundAPIAdminOrder(c echo.Context) error {
	var body struct {
		Amount int64  `json:"amount"`
		Reason string `json:"reason"`
	}
	return h.changeAPIAdminOrder(c, &body, func(id int64) error {
		_, err := h.Billing.Refund(c.Request().Context(), id, body.Amount, strings.TrimSpace(body.Reason), actor(c))
		if errors.Is(err, billing.ErrStripe) {
			h.Logger.WarnContext(c.Request().Context(), "stripe refund", "order", id, "error", err)
		}
		return err
	})
}

// apiAdminSubscription is an organization's subscription (a user's is
// their personal organization's) as the admin API shows it: the user
// API's, with the organization, and the plan and the period that follow.
type apiAdminSubscription struct {
	OrgID   int64  `json:"org_id"`
	OrgName string `json:"org_name"`
	PlanID  int64  `json:"plan_id"`
	Plan    string `json:"plan"`
	apiSubscription
	ScheduledPeriod string `json:"scheduled_period"`
}

// showAPIAdminSubscription is GET /api/v1/admin/users/:id/subscription.
func (h *Handlers) showAPIAdminSubscription(c echo.Context) error {
	_, org, err := h.subscriptionOrgAPIParam(c)
	if err != nil {
		return err
	}
	return h.answerAPIAdminSubscription(c, org)
}

// answerAPIAdminSubscription answers with organization orgID's
// subscription as it is now.
func (h *Handlers) answerAPIAdminSubscription(c echo.Context, orgID int64) error {
	sub, err := h.Billing.SubscriptionOfOrg(c.Request().Context(), orgID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiAdminSubscriptionOf(sub))
}

func apiAdminSubscriptionOf(sub billing.Subscription) apiAdminSubscription {
	return apiAdminSubscription{
		OrgID: sub.OrgID, OrgName: sub.OrgName, PlanID: sub.PlanID, Plan: sub.Plan.Name,
		apiSubscription: apiSubscriptionOf(sub), ScheduledPeriod: sub.ScheduledPeriod.String,
	}
}

// apiAdminSubChange is a change an admin makes to an organization's
// subscription through the API: the body it reads, and what it runs on
// the organization once the body is read.
type apiAdminSubChange func(c echo.Context) (body any, run func(orgID int64) error)

// changeAPIAdminSubscription runs a change of the subscription of the
// path's user (their personal organization's, whose id run is given)
// and answers with the subscription.
func (h *Handlers) changeAPIAdminSubscription(change apiAdminSubChange) echo.HandlerFunc {
	return func(c echo.Context) error {
		_, org, err := h.subscriptionOrgAPIParam(c)
		if err != nil {
			return err
		}
		body, run := change(c)
		return h.changeAPIAdmin(c, org, body, run, h.answerAPIAdminSubscription)
	}
}

// subscriptionOrgAPIParam is subscriptionOrgParam, with the admin API's
// message for a user not found.
func (h *Handlers) subscriptionOrgAPIParam(c echo.Context) (userID, orgID int64, err error) {
	userID, orgID, err = h.subscriptionOrgParam(c)
	if errors.Is(err, echo.ErrNotFound) {
		return 0, 0, errAdminUserNotFound
	}
	return userID, orgID, err
}

// apiAdminSetPlan is POST .../subscription/plan: the organization is on
// the plan from now, with no period end, for a reason.
func (h *Handlers) apiAdminSetPlan(c echo.Context) (any, func(int64) error) {
	var body struct {
		PlanID int64  `json:"plan_id"`
		Reason string `json:"reason"`
	}
	return &body, func(org int64) error {
		return h.Billing.AdminSetPlan(c.Request().Context(), org, body.PlanID, body.Reason, actor(c))
	}
}

// apiAdminExtend is POST .../subscription/extend: the paid period ends
// days later, for a reason.
func (h *Handlers) apiAdminExtend(c echo.Context) (any, func(int64) error) {
	var body struct {
		Days   int    `json:"days"`
		Reason string `json:"reason"`
	}
	return &body, func(org int64) error {
		return h.Billing.AdminExtend(c.Request().Context(), org, body.Days, body.Reason, actor(c))
	}
}

// apiAdminCancel is POST .../subscription/cancel: the organization is on
// the default plan at once, for a reason.
func (h *Handlers) apiAdminCancel(c echo.Context) (any, func(int64) error) {
	var body struct {
		Reason string `json:"reason"`
	}
	return &body, func(org int64) error {
		return h.Billing.AdminCancel(c.Request().Context(), org, body.Reason, actor(c))
	}
}

// apiAdminBillingFields are the refusals of the billing actions that are
// about one field of the body.
var apiAdminBillingFields = map[error]string{
	billing.ErrReferenceRequired: "reference",
	billing.ErrReferenceTooLong:  "reference",
	billing.ErrRefundAmount:      "amount",
	billing.ErrReasonRequired:    "reason",
	billing.ErrExtendDays:        "days",
	billing.ErrPlanNotFound:      "plan_id",
}

// apiAdminBillingError answers a billing action's refusal: 404 for an
// order or user that does not exist (or an admin no longer one), 422 for
// a field, 409 for what the order's or subscription's state does not
// allow, 502 when Stripe would not refund.
func apiAdminBillingError(err error) error {
	for e, field := range apiAdminBillingFields {
		if errors.Is(err, e) {
			return input.Errors{field: e.Error()}
		}
	}
	switch {
	case errors.Is(err, billing.ErrOrderNotFound):
		return errAdminOrderNotFound
	case errors.Is(err, orgs.ErrNotFound), errors.Is(err, adminauth.ErrNotAdmin):
		// The subscription routes are a user's: their personal
		// organization went with them.
		return errAdminUserNotFound
	case errors.Is(err, billing.ErrAlreadyPaid), errors.Is(err, billing.ErrNotManual), errors.Is(err, billing.ErrOrderClosed),
		errors.Is(err, billing.ErrNotPaid), errors.Is(err, billing.ErrNoPeriod):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	case errors.Is(err, billing.ErrStripe):
		return echo.NewHTTPError(http.StatusBadGateway, billing.ErrStripe.Error()).SetInternal(err)
	}
	return err
}
