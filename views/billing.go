package views

import "time"

// Billing is an organization's plan page: the plan, its prices, what it
// uses of each limit, the period and what happens at its end, the plans
// to choose from, and its orders.
type Billing struct {
	// OrgName names a team's organization (empty for a personal one).
	OrgName               string
	PlanName, Description string
	Default, Ingress      bool
	// Manage: the reader may order, pay and cancel, and read the orders
	// (an owner); other members read the plan, its limits and the plans
	// on offer, with no form to act on them.
	Manage bool
	Limits []BillingLimit
	// Status is the subscription's (active, past_due, cancelled,
	// expired); PeriodEnd is zero without a paid period.
	Status      string
	Period      string
	PeriodEnd   time.Time
	GraceUntil  time.Time
	CancelAtEnd bool
	// Scheduled is the plan that follows at the period's end.
	Scheduled string
	// Plans are the plans on offer; Methods the payment methods open.
	Plans   []BillingPlanCard
	Methods []string
	// Pending is the order waiting for payment, if any.
	Pending *BillingOrder
	Orders  []BillingOrder
	Error   string
}

// BillingLimit is one limit of the plan and what the user uses of it.
type BillingLimit struct {
	Key, LabelID string
	Used, Max    int64
}

// Over reports whether the user uses more than the limit allows.
func (l BillingLimit) Over() bool { return l.Used > l.Max }

// BillingPlanCard is a plan a user can choose.
type BillingPlanCard struct {
	ID                         int64
	Name, Description          string
	Clusters, Nodes, Hostnames int32
	Ingress                    bool
	Prices                     PlanPrices
	// Current: the user's plan.
	Current bool
}

// PlanPrices are a plan's prices as "CNY 99.00", empty for a period not
// on sale; Free: the plan costs nothing (and has no prices).
type PlanPrices struct {
	Free            bool
	Monthly, Yearly string
}

// OnSale: some period can be bought.
func (p PlanPrices) OnSale() bool { return p.Monthly != "" || p.Yearly != "" }

// BillingOrder is one of a user's orders.
type BillingOrder struct {
	ID                         int64
	Number, Plan, Period, Kind string
	Status, Method             string
	Amount, Credit, Tax, Total string
	TaxLabel, Refunded         string
	HasCredit, HasTax, Refund  bool
	Created, Expires, Paid     time.Time
	PeriodStart, PeriodEnd     time.Time
	Instructions               string
	// Returned: back from Stripe's page, the payment not confirmed yet.
	Returned                    bool
	SellerName, SellerAddress   string
	SellerTaxID, Buyer, BuyerID string
	// BuyerOrg is the team's organization the order is for (empty for a
	// personal one); Buyer is who placed it.
	BuyerOrg string
}
