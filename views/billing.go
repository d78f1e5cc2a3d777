package views

// Billing is a user's plan page: the plan, its prices, and what they use
// of each limit.
type Billing struct {
	PlanName, Description string
	Default, Ingress      bool
	Monthly, Yearly       string
	Limits                []BillingLimit
}

// BillingLimit is one limit of the plan and what the user uses of it.
type BillingLimit struct {
	Key, LabelID string
	Used, Max    int64
}

// Over reports whether the user uses more than the limit allows.
func (l BillingLimit) Over() bool { return l.Used > l.Max }
