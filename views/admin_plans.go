package views

// AdminPlans is the plans page: every plan, and the form of a new one.
type AdminPlans struct {
	Plans      []AdminPlanRow
	New        Form
	Currencies []string
}

// AdminPlanRow is a plan in the list; prices as "CNY 99.00".
type AdminPlanRow struct {
	ID                         int64
	Name, NameZh               string
	Clusters, Nodes, Hostnames int32
	Ingress, Public            bool
	Prices                     PlanPrices
	Default, Archived          bool
	SortOrder                  int32
}

// AdminPlan is one plan's page: its form, its state, and how many of its
// users are over its limits.
type AdminPlan struct {
	ID                int64
	Name              string
	Form              Form
	Default, Archived bool
	Over              int64
	Currencies        []string
}
