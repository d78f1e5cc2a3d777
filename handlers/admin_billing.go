package handlers

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// Sizes of the order lists.
const (
	ordersPerPage = 50
	// ordersCSVMax caps an export: a filter narrows a bigger one.
	ordersCSVMax = 10000
	// userOrdersShown is how many of the orders a user placed their admin
	// page lists.
	userOrdersShown = 10
)

var (
	orderStatuses = []string{billing.OrderPending, billing.OrderPaid, billing.OrderCancelled, billing.OrderExpired, billing.OrderRefunded}
	orderMethods  = []string{billing.MethodManual, billing.MethodStripe}
)

// orderFilterFields are the order list's filters, as its GET form names
// them.
var orderFilterFields = []string{"status", "method", "email", "number", "from", "to"}

// orderFilter reads the order list's filters: an unknown status or
// method is no filter, a date that is not one is a field error. The
// email matches whatever its case (billing.Service.AdminOrders).
func orderFilter(c echo.Context) (views.Form, queries.OrderListAdminParams) {
	f := views.NewForm()
	for _, name := range orderFilterFields {
		f.Values[name] = strings.TrimSpace(c.QueryParam(name))
	}
	if !slices.Contains(orderStatuses, f.Values["status"]) {
		f.Values["status"] = ""
	}
	if !slices.Contains(orderMethods, f.Values["method"]) {
		f.Values["method"] = ""
	}
	f.Values["number"] = strings.ToUpper(f.Values["number"])
	p := queries.OrderListAdminParams{Status: f.Value("status"), Method: f.Value("method"), Number: f.Value("number"), UserEmail: f.Value("email")}
	day := func(name string, plus int) pgtype.Timestamptz {
		v := f.Value(name)
		if v == "" {
			return pgtype.Timestamptz{}
		}
		t, err := time.ParseInLocation(time.DateOnly, v, time.UTC)
		if err != nil {
			f.Errors[name] = "ErrAdminOrdersDate"
			return pgtype.Timestamptz{}
		}
		return pgtype.Timestamptz{Time: t.AddDate(0, 0, plus), Valid: true}
	}
	// Both days are whole: until the end of the last one.
	p.Since, p.Until = day("from", 0), day("to", 1)
	return f, p
}

// adminOrdersURL is a page of the order list (path /admin/orders) or its
// CSV (/admin/orders.csv) for the filter f, older than before (0: the
// newest).
func adminOrdersURL(path string, f views.Form, before int64) string {
	v := url.Values{}
	for _, name := range orderFilterFields {
		if s := f.Value(name); s != "" {
			v.Set(name, s)
		}
	}
	if before != 0 {
		v.Set("before", strconv.FormatInt(before, 10))
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// showAdminOrdersPage is GET /admin/orders: newest first, a page at a
// time (keyset: ?before=<the last id shown>).
func (h *Handlers) showAdminOrdersPage(c echo.Context) error {
	f, p := orderFilter(c)
	m := views.AdminOrders{Filter: f, Statuses: orderStatuses, Methods: orderMethods, CSVURL: adminOrdersURL("/admin/orders.csv", f, 0)}
	if len(f.Errors) > 0 {
		return render(c, http.StatusUnprocessableEntity, views.AdminOrdersPage(m))
	}
	before := queryID(c, "before")
	p.Before, p.MaxRows = before, ordersPerPage+1
	rows, err := h.Billing.AdminOrders(c.Request().Context(), p)
	if err != nil {
		return err
	}
	if len(rows) > ordersPerPage {
		rows = rows[:ordersPerPage]
		m.OlderURL = adminOrdersURL("/admin/orders", f, rows[len(rows)-1].Order.ID)
	}
	if before != 0 {
		m.NewestURL = adminOrdersURL("/admin/orders", f, 0)
	}
	for _, r := range rows {
		m.Orders = append(m.Orders, adminOrderRowOf(r))
	}
	h.viewAsAPICall(c, "adminListOrders", nil)
	return render(c, http.StatusOK, views.AdminOrdersPage(m))
}

// adminOrderRowOf is an order of the back office's list: the
// organization it is for, and who placed it.
func adminOrderRowOf(r queries.OrderListAdminRow) views.AdminOrderRow {
	o := r.Order
	return views.AdminOrderRow{
		ID: o.ID, Number: o.Number, OrgID: o.OrgID, OrgName: r.OrgName, UserID: o.UserID, UserEmail: r.UserEmail,
		Plan: r.PlanName, Period: o.Period, Total: billing.Money{Minor: o.Total, Currency: o.Currency}.String(),
		Method: o.Method, Status: o.Status, Created: timeOf(o.CreatedAt),
	}
}

// exportAdminOrders is GET /admin/orders.csv: the orders of the list's
// filter, newest first, up to ordersCSVMax. Columns are stable names and
// amounts plain decimals, for spreadsheets and scripts; user_email is who
// placed the order, organization (last, added with issue 38) what it is
// for.
func (h *Handlers) exportAdminOrders(c echo.Context) error {
	f, p := orderFilter(c)
	if len(f.Errors) > 0 {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, "ErrAdminOrdersDate")
	}
	p.MaxRows = ordersCSVMax
	rows, err := h.Billing.AdminOrders(c.Request().Context(), p)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write([]string{
		"number", "created_at", "user_email", "plan", "period", "kind", "currency", "amount", "credit", "tax", "tax_label",
		"total", "refunded", "method", "status", "reference", "paid_at", "period_start", "period_end", "organization",
	})
	for _, r := range rows {
		o := r.Order
		money := func(minor int64) string { return billing.Money{Minor: minor, Currency: o.Currency}.Decimal() }
		_ = w.Write([]string{
			o.Number, csvTime(o.CreatedAt), csvText(r.UserEmail), csvText(r.PlanName), o.Period, o.Kind, o.Currency,
			money(o.Amount), money(o.Credit), money(o.Tax), csvText(o.TaxLabel), money(o.Total), money(o.RefundedAmount),
			o.Method, o.Status, csvText(o.Reference), csvTime(o.PaidAt), csvTime(o.PeriodStart), csvTime(o.PeriodEnd),
			csvText(r.OrgName),
		})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("write orders CSV: %w", err)
	}
	name := "orders-" + time.Now().UTC().Format("20060102-150405") + ".csv"
	c.Response().Header().Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	return c.Blob(http.StatusOK, "text/csv; charset=utf-8", buf.Bytes())
}

// csvTime is a time in a CSV cell: RFC 3339 in UTC, empty for NULL.
func csvTime(t pgtype.Timestamptz) string {
	if !t.Valid {
		return ""
	}
	return t.Time.UTC().Format(time.RFC3339)
}

// csvText is text typed by people in a CSV cell: one that a spreadsheet
// would take for a formula is quoted as text.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// orderIDParam is the :id of the path's order; a malformed one is not
// found.
func orderIDParam(c echo.Context) (int64, error) { return pathID(c, "id", echo.ErrNotFound) }

// showAdminOrderPage is GET /admin/orders/:id.
func (h *Handlers) showAdminOrderPage(c echo.Context) error {
	id, err := orderIDParam(c)
	if err != nil {
		return err
	}
	h.viewAsAPICall(c, "adminGetOrder", nil, c.Param("id"))
	return h.renderAdminOrder(c, http.StatusOK, id, views.NewForm(), "")
}

// renderAdminOrder shows the order with id; f is the form of action
// ("paid" or "cancel"), when one was submitted and failed.
func (h *Handlers) renderAdminOrder(c echo.Context, status int, id int64, f views.Form, action string) error {
	d, err := h.Billing.AdminOrder(c.Request().Context(), id)
	if errors.Is(err, billing.ErrOrderNotFound) {
		return echo.ErrNotFound
	}
	if err != nil {
		return err
	}
	o, u, plan := d.Order, d.User, d.Plan
	money := func(minor int64) string { return billing.Money{Minor: minor, Currency: o.Currency}.String() }
	m := views.AdminOrder{
		ID: o.ID, Number: o.Number, OrgID: d.Org.ID, OrgName: d.Org.Name, UserID: u.ID, UserEmail: u.Email, Plan: plan.Name, Period: o.Period, Kind: o.Kind,
		Status: o.Status, Method: o.Method, Reference: o.Reference,
		Amount: money(o.Amount), Credit: money(o.Credit), Tax: money(o.Tax), Total: money(o.Total), Refunded: money(o.RefundedAmount),
		TaxLabel: o.TaxLabel, HasCredit: o.Credit > 0, HasRefund: o.RefundedAmount > 0,
		PeriodStart: timeOf(o.PeriodStart), PeriodEnd: timeOf(o.PeriodEnd),
		Created: timeOf(o.CreatedAt), Expires: timeOf(o.ExpiresAt), Paid: timeOf(o.PaidAt), Closed: timeOf(o.ClosedAt),
		CanMarkPaid: o.Status == billing.OrderPending && o.Method == billing.MethodManual,
		CanCancel:   o.Status == billing.OrderPending,
		CanRefund:   o.Status == billing.OrderPaid && o.RefundedAmount < o.Total,
		RefundLeft:  billing.Money{Minor: o.Total - o.RefundedAmount, Currency: o.Currency}.Decimal(),
		Form:        f, Action: action,
	}
	for _, e := range d.Events {
		m.Events = append(m.Events, views.AdminOrderEvent{
			Time: timeOf(e.CreatedAt), Kind: e.Kind, ActorID: e.ActorID.Int64, ActorEmail: e.ActorEmail, Detail: compactJSON(e.Detail),
		})
	}
	return render(c, status, views.AdminOrderPage(m))
}

// compactJSON is an event's detail on one line; "{}" says nothing.
func compactJSON(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	if buf.String() == "{}" {
		return ""
	}
	return buf.String()
}

// markOrderPaid is POST /admin/orders/:id/paid: an admin received a
// manual order's money, with the payment's reference.
func (h *Handlers) markOrderPaid(c echo.Context) error {
	id, err := orderIDParam(c)
	if err != nil {
		return err
	}
	f := formFrom(c, "reference")
	f.Values["reference"] = strings.TrimSpace(f.Value("reference"))
	_, err = h.Billing.MarkPaid(c.Request().Context(), id, f.Value("reference"), actor(c))
	switch {
	case err == nil:
		h.flash(c, "FlashAdminOrderPaid")
		return redirect(c, fmt.Sprintf("/admin/orders/%d", id))
	case errors.Is(err, billing.ErrOrderNotFound), errors.Is(err, adminauth.ErrNotAdmin):
		return echo.ErrNotFound
	case errors.Is(err, billing.ErrReferenceRequired), errors.Is(err, billing.ErrReferenceTooLong):
		f.Errors["reference"] = err.Error()
	case errors.Is(err, billing.ErrAlreadyPaid), errors.Is(err, billing.ErrNotManual), errors.Is(err, billing.ErrOrderClosed):
		f.Error = err.Error()
	default:
		return err
	}
	return h.renderAdminOrder(c, http.StatusUnprocessableEntity, id, f, "paid")
}

// refundAdminOrder is POST /admin/orders/:id/refund: an amount of a paid
// order given back, for a reason: through Stripe for a Stripe order,
// recorded for a manual one; the period it paid for ends or shortens.
func (h *Handlers) refundAdminOrder(c echo.Context) error {
	id, err := orderIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	f := formFrom(c, "amount", "reason")
	o, err := h.Billing.Order(ctx, id)
	if errors.Is(err, billing.ErrOrderNotFound) {
		return echo.ErrNotFound
	}
	if err != nil {
		return err
	}
	amount, err := billing.ParseMoney(f.Value("amount"), o.Currency)
	if err != nil {
		f.Errors["amount"] = billing.ErrRefundAmount.Error()
		return h.renderAdminOrder(c, http.StatusUnprocessableEntity, id, f, "refund")
	}
	_, err = h.Billing.Refund(ctx, id, amount.Minor, strings.TrimSpace(f.Value("reason")), actor(c))
	switch {
	case err == nil:
		h.flash(c, "FlashAdminOrderRefunded")
		return redirect(c, fmt.Sprintf("/admin/orders/%d", id))
	case errors.Is(err, billing.ErrOrderNotFound), errors.Is(err, adminauth.ErrNotAdmin):
		return echo.ErrNotFound
	case errors.Is(err, billing.ErrRefundAmount):
		f.Errors["amount"] = err.Error()
	case errors.Is(err, billing.ErrReasonRequired):
		f.Errors["reason"] = err.Error()
	case errors.Is(err, billing.ErrNotPaid):
		f.Error = billing.ErrNotPaid.Error()
	case errors.Is(err, billing.ErrStripe):
		h.Logger.WarnContext(ctx, "stripe refund", "order", id, "error", err)
		f.Error = billing.ErrStripe.Error()
	default:
		return err
	}
	return h.renderAdminOrder(c, http.StatusUnprocessableEntity, id, f, "refund")
}

// cancelAdminOrder is POST /admin/orders/:id/cancel: a pending order
// will not be paid.
func (h *Handlers) cancelAdminOrder(c echo.Context) error {
	id, err := orderIDParam(c)
	if err != nil {
		return err
	}
	_, err = h.Billing.AdminCancelOrder(c.Request().Context(), id, actor(c))
	switch {
	case err == nil:
		h.flash(c, "FlashAdminOrderCancelled")
		return redirect(c, fmt.Sprintf("/admin/orders/%d", id))
	case errors.Is(err, billing.ErrOrderNotFound), errors.Is(err, adminauth.ErrNotAdmin):
		return echo.ErrNotFound
	case errors.Is(err, billing.ErrOrderClosed), errors.Is(err, billing.ErrAlreadyPaid):
		f := views.NewForm()
		f.Error = err.Error()
		return h.renderAdminOrder(c, http.StatusUnprocessableEntity, id, f, "cancel")
	}
	return err
}

// revenueMonths is how many months the billing overview shows revenue
// for, this one included.
const revenueMonths = 12

// showAdminBillingPage is GET /admin/billing: the overview and the
// billing settings, as stored.
func (h *Handlers) showAdminBillingPage(c echo.Context) error {
	st, err := h.Billing.Settings(c.Request().Context())
	if err != nil {
		return err
	}
	h.viewAsAPICall(c, "adminGetBillingSettings", nil)
	return h.renderAdminBilling(c, http.StatusOK, billingSettingsForm(st), st)
}

// renderAdminBilling shows the overview with f, the settings form; stored
// are the stored settings, for whether the Stripe secrets are set.
func (h *Handlers) renderAdminBilling(c echo.Context, status int, f views.Form, stored billing.Settings) error {
	now := time.Now().UTC()
	since := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -(revenueMonths - 1), 0)
	o, err := h.Billing.Overview(c.Request().Context(), since)
	if err != nil {
		return err
	}
	m := views.AdminBilling{
		Awaiting: o.Awaiting, Settings: f, Methods: orderMethods, Revenue: revenueView(o.Revenue, since),
		StripeKeyStored: stored.StripeSecretKey != "", WebhookSecretStored: stored.StripeWebhookSecret != "",
		WebhookURL: strings.TrimRight(h.BaseURL, "/") + "/webhooks/stripe",
	}
	for _, p := range o.Plans {
		m.Plans = append(m.Plans, views.AdminBillingPlan{
			ID: p.ID, Name: p.Name, Default: p.IsDefault, Active: p.Active, PastDue: p.PastDue, Cancelling: p.Cancelling,
		})
	}
	return render(c, status, views.AdminBillingPage(m))
}

// revenueView is the revenue of each currency by month from since, every
// month shown (none paid is 0), the currencies in alphabetical order.
func revenueView(rows []queries.RevenueByMonthRow, since time.Time) []views.AdminRevenue {
	type key struct{ currency, month string }
	paid, orders := map[key]int64{}, map[key]int64{}
	var currencies []string
	for _, r := range rows {
		k := key{r.Currency, r.Month.Time.UTC().Format("2006-01")}
		paid[k] += r.Revenue
		orders[k] += r.Orders
		if !slices.Contains(currencies, r.Currency) {
			currencies = append(currencies, r.Currency)
		}
	}
	slices.Sort(currencies)
	var out []views.AdminRevenue
	for _, cur := range currencies {
		r := views.AdminRevenue{Currency: cur}
		var total, best int64
		for i := range revenueMonths {
			k := key{cur, since.AddDate(0, i, 0).Format("2006-01")}
			total += paid[k]
			best = max(best, paid[k])
			r.Months = append(r.Months, views.AdminRevenueMonth{
				Month: k.month, Amount: billing.Money{Minor: paid[k], Currency: cur}.String(), Orders: orders[k], Value: paid[k],
			})
		}
		for i := range r.Months {
			r.Months[i].Max = best
		}
		r.Total = billing.Money{Minor: total, Currency: cur}.String()
		out = append(out, r)
	}
	return out
}

// billingSettingsFields are the plain fields of the billing settings form
// (the methods are checkboxes, the Stripe secrets never shown back).
var billingSettingsFields = []string{
	billing.FieldInstructions, billing.FieldOrderExpiry, billing.FieldGraceDays, billing.FieldSellerName,
	billing.FieldSellerAddress, billing.FieldSellerTaxID, billing.FieldTaxLabel, billing.FieldTaxRate,
}

// billingSettingsForm shows stored settings in the form, without the
// Stripe secrets.
func billingSettingsForm(st billing.Settings) views.Form {
	f := views.NewForm()
	f.Values = map[string]string{
		billing.FieldInstructions: st.ManualInstructions,
		billing.FieldOrderExpiry:  strconv.Itoa(st.OrderExpiryHours), billing.FieldGraceDays: strconv.Itoa(st.GraceDays),
		billing.FieldSellerName: st.SellerName, billing.FieldSellerAddress: st.SellerAddress, billing.FieldSellerTaxID: st.SellerTaxID,
		billing.FieldTaxLabel: st.TaxLabel, billing.FieldTaxRate: percentOf(st.TaxRateBasisPoints),
	}
	checkedBoxes(f, "method_", st.Methods)
	checkedBoxes(f, "stripe_method_", st.StripeMethodsOffered())
	return f
}

// checkedBoxes shows the checkboxes of values checked on f (as
// prefix+value), and returns values without repeats, never nil: a form
// with none checked says so.
func checkedBoxes(f views.Form, prefix string, values []string) []string {
	out := []string{}
	for _, v := range values {
		if !slices.Contains(out, v) {
			out = append(out, v)
			f.Values[prefix+v] = "on"
		}
	}
	return out
}

// billingSettingsInput reads the submitted settings form. A number that
// is not one reads as -1, which the service refuses with that field's
// message.
func billingSettingsInput(c echo.Context) (views.Form, billing.Settings, error) {
	f := formFrom(c, billingSettingsFields...)
	for name, v := range f.Values {
		f.Values[name] = strings.TrimSpace(v)
	}
	params, err := c.FormParams()
	if err != nil {
		return f, billing.Settings{}, fmt.Errorf("read billing settings form: %w", err)
	}
	st := billing.Settings{
		Methods:       checkedBoxes(f, "method_", params[billing.FieldMethods]),
		StripeMethods: checkedBoxes(f, "stripe_method_", params[billing.FieldStripeMethods]),
	}
	number := func(name string) int {
		n, err := strconv.Atoi(f.Value(name))
		if err != nil {
			return -1
		}
		return n
	}
	st.ManualInstructions = f.Value(billing.FieldInstructions)
	st.OrderExpiryHours, st.GraceDays = number(billing.FieldOrderExpiry), number(billing.FieldGraceDays)
	st.SellerName, st.SellerAddress, st.SellerTaxID = f.Value(billing.FieldSellerName), f.Value(billing.FieldSellerAddress), f.Value(billing.FieldSellerTaxID)
	st.TaxLabel, st.TaxRateBasisPoints = f.Value(billing.FieldTaxLabel), basisPointsOf(f.Value(billing.FieldTaxRate))
	st.StripeSecretKey = strings.TrimSpace(c.FormValue(billing.FieldStripeSecretKey))
	st.StripeWebhookSecret = strings.TrimSpace(c.FormValue(billing.FieldStripeWebhook))
	return f, st, nil
}

// basisPointsOf reads a percentage typed with up to two decimal places
// ("8.25", "8.25%", "8") as basis points (825); empty is 0, anything
// else -1.
func basisPointsOf(s string) int {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	if s == "" {
		return 0
	}
	whole, frac, point := strings.Cut(s, ".")
	if whole == "" || len(whole) > 3 || (point && (frac == "" || len(frac) > 2)) || !onlyDigits(whole) || !onlyDigits(frac) {
		return -1
	}
	n, err := strconv.Atoi(whole + frac + strings.Repeat("0", 2-len(frac)))
	if err != nil {
		return -1
	}
	return n
}

func onlyDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// percentOf shows basis points as a percentage: 825 is "8.25", 800 "8".
func percentOf(bp int) string {
	s := fmt.Sprintf("%d.%02d", bp/100, bp%100)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// saveBillingSettings is POST /admin/billing/settings. Empty Stripe
// secrets keep the stored ones.
func (h *Handlers) saveBillingSettings(c echo.Context) error {
	f, st, err := billingSettingsInput(c)
	if err != nil {
		return err
	}
	if err := h.Billing.SaveSettings(c.Request().Context(), st, actor(c)); err != nil {
		return adminSaveError(c, err, &f, "ErrAdminBillingNotSaved", nil, func(status int) error {
			stored, err := h.Billing.Settings(c.Request().Context())
			if err != nil {
				return err
			}
			return h.renderAdminBilling(c, status, f, stored)
		})
	}
	h.flash(c, "FlashAdminBillingSaved")
	return redirect(c, "/admin/billing")
}

// adminSubscriptionView is the subscription section of u's admin page:
// their personal organization's subscription, and the last orders they
// placed (for any organization); f is the subscription form of action,
// when one was submitted and failed.
func (h *Handlers) adminSubscriptionView(ctx context.Context, u queries.User, f views.Form, action string) (views.AdminSubscription, error) {
	personal, err := h.Orgs.Personal(ctx, u.ID)
	if err != nil {
		return views.AdminSubscription{}, err
	}
	sub, err := h.Billing.SubscriptionOfOrg(ctx, personal.Org.ID)
	if err != nil {
		return views.AdminSubscription{}, err
	}
	m, err := h.adminSubscriptionOf(ctx, sub, fmt.Sprintf("/admin/users/%d/subscription", u.ID), f, action)
	if err != nil {
		return views.AdminSubscription{}, err
	}
	orders, err := h.Billing.AdminOrders(ctx, queries.OrderListAdminParams{UserEmail: u.Email, MaxRows: userOrdersShown})
	if err != nil {
		return views.AdminSubscription{}, err
	}
	m.OrdersURL = "/admin/orders?" + url.Values{"email": {u.Email}}.Encode()
	for _, r := range orders {
		m.Orders = append(m.Orders, adminOrderRowOf(r))
	}
	return m, nil
}

// adminSubscriptionOf is an organization's subscription as an admin page
// shows it, with the plans an admin may put it on and the forms that
// change it, posted under actionURL; f is the form of action, when one
// was submitted and failed.
func (h *Handlers) adminSubscriptionOf(ctx context.Context, sub billing.Subscription, actionURL string, f views.Form, action string) (views.AdminSubscription, error) {
	plans, err := h.Billing.Plans(ctx)
	if err != nil {
		return views.AdminSubscription{}, err
	}
	m := views.AdminSubscription{
		ActionURL: actionURL, OrgID: sub.OrgID, OrgName: sub.OrgName,
		PlanID: sub.PlanID, Plan: sub.Plan.Name, Status: sub.Status, Period: sub.Period.String,
		PeriodEnd: timeOf(sub.CurrentPeriodEnd), CancelAtPeriodEnd: sub.CancelAtPeriodEnd,
		Scheduled: sub.ScheduledPlan, ScheduledPeriod: sub.ScheduledPeriod.String,
		Form: f, Action: action,
	}
	for _, p := range plans {
		if !p.ArchivedAt.Valid {
			m.Plans = append(m.Plans, views.AdminPlanOption{ID: p.ID, Name: p.Name})
		}
	}
	return m, nil
}

// subscriptionOrgParam is the :id of the user whose subscription an
// admin changes, and the id of their personal organization, whose
// subscription it is; an unknown user is not found.
func (h *Handlers) subscriptionOrgParam(c echo.Context) (userID, orgID int64, err error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return 0, 0, echo.ErrNotFound
	}
	ctx := c.Request().Context()
	_, err = h.AdminUsers.User(ctx, id)
	if errors.Is(err, adminusers.ErrNotFound) {
		return 0, 0, echo.ErrNotFound
	}
	if err != nil {
		return 0, 0, err
	}
	personal, err := h.Orgs.Personal(ctx, id)
	if err != nil {
		return 0, 0, err
	}
	return id, personal.Org.ID, nil
}

// adminSubChange is a change an admin makes to organization orgID's
// subscription from a form of the back office, through the billing
// service (audited there): the form as submitted, and the service's
// refusal.
type adminSubChange struct {
	// action names the form: "plan", "extend" or "cancel".
	action string
	run    func(h *Handlers, c echo.Context, orgID int64) (views.Form, error)
}

// The subscription changes: on a plan from now, with no period end; the
// paid period ends days later; on the default plan at once. Each says
// why.
var (
	adminSubSetPlan = adminSubChange{"plan", func(h *Handlers, c echo.Context, org int64) (views.Form, error) {
		f := formFrom(c, "plan_id", "reason")
		planID, _ := strconv.ParseInt(f.Value("plan_id"), 10, 64)
		return f, h.Billing.AdminSetPlan(c.Request().Context(), org, planID, f.Value("reason"), actor(c))
	}}
	adminSubExtend = adminSubChange{"extend", func(h *Handlers, c echo.Context, org int64) (views.Form, error) {
		f := formFrom(c, "days", "reason")
		// Not a number: 0, which the service refuses with the days' message.
		days, _ := strconv.Atoi(strings.TrimSpace(f.Value("days")))
		return f, h.Billing.AdminExtend(c.Request().Context(), org, days, f.Value("reason"), actor(c))
	}}
	adminSubCancel = adminSubChange{"cancel", func(h *Handlers, c echo.Context, org int64) (views.Form, error) {
		f := formFrom(c, "reason")
		return f, h.Billing.AdminCancel(c.Request().Context(), org, f.Value("reason"), actor(c))
	}}
)

// adminSubPage is the admin page a subscription form is on: where it
// goes back to, and how it shows again with the form's error.
type adminSubPage struct {
	url    string
	render func(status int, f views.Form, action string) error
}

// setSubscriptionPlan is POST /admin/users/:id/subscription/plan: the
// user's personal organization is on the plan from now, with no period
// end, for a reason.
func (h *Handlers) setSubscriptionPlan(c echo.Context) error {
	return h.changeUserSubscription(c, adminSubSetPlan, "FlashAdminSubPlan")
}

// extendSubscription is POST /admin/users/:id/subscription/extend: the
// paid period of the user's personal organization ends days later, for a
// reason.
func (h *Handlers) extendSubscription(c echo.Context) error {
	return h.changeUserSubscription(c, adminSubExtend, "FlashAdminSubExtended")
}

// cancelSubscription is POST /admin/users/:id/subscription/cancel: the
// user's personal organization is on the default plan at once, for a
// reason.
func (h *Handlers) cancelSubscription(c echo.Context) error {
	return h.changeUserSubscription(c, adminSubCancel, "FlashAdminSubCancelled")
}

// changeUserSubscription makes a change to the subscription of the
// path's user, their personal organization's, from their page.
func (h *Handlers) changeUserSubscription(c echo.Context, change adminSubChange, flash string) error {
	id, org, err := h.subscriptionOrgParam(c)
	if err != nil {
		return err
	}
	f, err := change.run(h, c, org)
	return h.subscriptionChanged(c, adminSubPage{
		url: fmt.Sprintf("/admin/users/%d", id),
		render: func(status int, f views.Form, action string) error {
			return h.renderAdminUserPage(c, status, id, views.NewForm(), "", f, action)
		},
	}, change.action, f, err, flash)
}

// subscriptionChanged answers a subscription form: back to its page with
// flash when err is nil, else that page again with the form's error
// (422).
func (h *Handlers) subscriptionChanged(c echo.Context, page adminSubPage, action string, f views.Form, err error, flash string) error {
	switch {
	case err == nil:
		h.flash(c, flash)
		return redirect(c, page.url)
	case errors.Is(err, adminauth.ErrNotAdmin), errors.Is(err, orgs.ErrNotFound):
		return echo.ErrNotFound
	case errors.Is(err, billing.ErrReasonRequired):
		f.Errors["reason"] = err.Error()
	case errors.Is(err, billing.ErrExtendDays):
		f.Errors["days"] = err.Error()
	case errors.Is(err, billing.ErrPlanNotFound), errors.Is(err, billing.ErrNoPeriod):
		f.Error = err.Error()
	default:
		return err
	}
	return page.render(http.StatusUnprocessableEntity, f, action)
}
