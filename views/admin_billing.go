package views

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/stripepay"
)

// AdminOrders is one page of the order list: its filters as typed (a bad
// date is a field error), the orders, newest first, and the links to the
// next page and to the CSV of the same filter.
type AdminOrders struct {
	Filter   Form
	Statuses []string
	Methods  []string
	Orders   []AdminOrderRow
	// OlderURL is the next, older page; NewestURL the first one; empty
	// when there is none to go to.
	OlderURL  string
	NewestURL string
	CSVURL    string
}

// AdminOrderRow is an order in a list; amounts as "USD 12.50". The
// organization is what it is for, the user who placed it.
type AdminOrderRow struct {
	ID        int64
	Number    string
	OrgID     int64
	OrgName   string
	UserID    int64
	UserEmail string
	Plan      string
	Period    string // "month" or "year"
	Total     string
	Method    string
	Status    string
	Created   time.Time
}

// AdminOrder is one order's page: the organization it is for and who
// placed it (the user), what it costs, what it paid for, its history and,
// while it waits for its money, what an admin can do.
type AdminOrder struct {
	ID        int64
	Number    string
	OrgID     int64
	OrgName   string
	UserID    int64
	UserEmail string
	Plan      string
	Period    string
	Kind      string // "new" or "renewal"
	Status    string
	Method    string
	Reference string
	// Amounts as "USD 12.50"; TaxLabel names the tax (empty: no tax line).
	Amount, Credit, Tax, Total, Refunded string
	TaxLabel                             string
	HasCredit, HasRefund                 bool
	// The period the order paid for, once paid; zero before.
	PeriodStart, PeriodEnd time.Time
	Created, Expires       time.Time
	Paid, Closed           time.Time
	Events                 []AdminOrderEvent
	// CanMarkPaid: a pending manual order; CanCancel: a pending one.
	CanMarkPaid, CanCancel bool
	// CanRefund: a paid order with some of it not refunded yet;
	// RefundLeft is that much, as typed ("12.50").
	CanRefund  bool
	RefundLeft string
	// Form is the action ("paid" or "cancel") submitted last, when it
	// failed.
	Form   Form
	Action string
}

// AdminOrderEvent is one line of an order's history; Detail is its JSON,
// compact.
type AdminOrderEvent struct {
	Time       time.Time
	Kind       string
	ActorID    int64 // 0 for the system
	ActorEmail string
	Detail     string
}

// AdminBilling is the billing overview and the billing settings form.
type AdminBilling struct {
	Plans   []AdminBillingPlan
	Revenue []AdminRevenue
	// Awaiting is the number of orders waiting for their payment.
	Awaiting int64
	Settings Form
	Methods  []string
	// The Stripe secrets are never shown: only whether one is stored.
	StripeKeyStored, WebhookSecretStored bool
	// WebhookURL is the address to register with Stripe.
	WebhookURL string
}

// AdminBillingPlan is a plan's count of subscriptions by state.
type AdminBillingPlan struct {
	ID                          int64
	Name                        string
	Default                     bool
	Active, PastDue, Cancelling int64
}

// AdminRevenue is a currency's revenue over the last months, oldest first.
type AdminRevenue struct {
	Currency string
	Total    string
	Months   []AdminRevenueMonth
}

// AdminRevenueMonth is one month's revenue in one currency: Amount for
// reading, Value of Max (the currency's best month, in minor units) for
// its bar.
type AdminRevenueMonth struct {
	Month      string // "2025-01"
	Amount     string
	Orders     int64
	Value, Max int64
}

// AdminSubscription is the subscription of an organization (OrgID,
// OrgName) with the forms that change it, posted under ActionURL: on a
// user's admin page their personal organization's, with Orders, the last
// the user placed, for any organization; on an organization's admin page
// (ForOrg) its own, without orders.
type AdminSubscription struct {
	// ActionURL is where the forms post, /plan, /extend and /cancel
	// appended: /admin/users/:id/subscription or
	// /admin/organizations/:id/subscription.
	ActionURL         string
	ForOrg            bool
	OrgID             int64
	OrgName           string
	PlanID            int64
	Plan              string
	Status            string
	Period            string // "month", "year", or empty: no paid period
	PeriodEnd         time.Time
	CancelAtPeriodEnd bool
	// Scheduled is the plan that follows at the period's end, for
	// ScheduledPeriod; empty when none does.
	Scheduled       string
	ScheduledPeriod string
	Orders          []AdminOrderRow
	// OrdersURL lists all of the orders the user placed.
	OrdersURL string
	// Plans are the plans an admin may put the organization on (not
	// archived).
	Plans []AdminPlanOption
	// Form is the subscription form (Action "plan", "extend" or
	// "cancel") submitted last, when it failed.
	Form   Form
	Action string
}

// AdminPlanOption is a plan in a select.
type AdminPlanOption struct {
	ID   int64
	Name string
}

// adminOrderURL is the admin page of the order with id.
func adminOrderURL(id int64) templ.SafeURL {
	return templ.SafeURL(fmt.Sprintf("/admin/orders/%d", id))
}

// adminOrderStatusMsg is the message ID of an order status.
func adminOrderStatusMsg(status string) string {
	switch status {
	case "pending":
		return "AdminOrderStatusPending"
	case "paid":
		return "AdminOrderStatusPaid"
	case "cancelled":
		return "AdminOrderStatusCancelled"
	case "expired":
		return "AdminOrderStatusExpired"
	case "refunded":
		return "AdminOrderStatusRefunded"
	}
	return "AdminOrderStatusUnknown"
}

// adminOrderBadge is the colour of an order status's badge, by the
// admin badges' statuses: paid is good, refunded is money gone back,
// closed ones are grey.
func adminOrderBadge(status string) string {
	switch status {
	case "paid":
		return "active"
	case "refunded":
		return "disabled"
	case "cancelled", "expired":
		return "unverified"
	}
	return ""
}

// adminOrderMethodMsg is the message ID of a payment method.
func adminOrderMethodMsg(method string) string {
	if method == "stripe" {
		return "AdminOrderMethodStripe"
	}
	return "AdminOrderMethodManual"
}

// adminPeriodMsg is the message ID of a billing period.
func adminPeriodMsg(period string) string {
	switch period {
	case "month":
		return "AdminBillingPeriodMonth"
	case "year":
		return "AdminBillingPeriodYear"
	}
	return "AdminBillingPeriodNone"
}

// adminSubStatusMsg is the message ID of a subscription status.
func adminSubStatusMsg(status string) string {
	switch status {
	case "past_due":
		return "AdminSubStatusPastDue"
	case "cancelled":
		return "AdminSubStatusCancelled"
	case "expired":
		return "AdminSubStatusExpired"
	}
	return "AdminSubStatusActive"
}

// adminSubPlanSelected reports whether the plan with id is the one the
// set-plan select shows: the one submitted, else the organization's.
func adminSubPlanSelected(s AdminSubscription, id int64) bool {
	if s.Action == "plan" {
		return s.Form.Value("plan_id") == strconv.FormatInt(id, 10)
	}
	return id == s.PlanID
}

// stripeMethodCurrencies lists the currencies a Stripe payment method
// takes.
func stripeMethodCurrencies(ctx context.Context, method string) string {
	cs := stripepay.Currencies(method)
	if cs == nil {
		return locale.T(ctx, "AdminBillingStripeEveryCurrency")
	}
	return strings.Join(cs, ", ")
}

// adminSubMsg is the message ID of a subscription section's text: the
// organization page's variant (Org appended) where it names whom a change
// is told to.
func adminSubMsg(s AdminSubscription, id string) string {
	if s.ForOrg {
		return id + "Org"
	}
	return id
}
