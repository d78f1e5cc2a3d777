package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/views"
)

// showBillingPage is GET /billing: the user's plan and their usage
// against its limits.
func (h *Handlers) showBillingPage(c echo.Context) error {
	u, _ := currentUser(c)
	ctx := c.Request().Context()
	use, err := h.Billing.UsageOf(ctx, u.ID)
	if err != nil {
		return err
	}
	p := use.Plan
	monthly, yearly := billing.Prices(p)
	m := views.Billing{
		PlanName: p.Name, Description: p.DescriptionEn, Default: p.IsDefault, Ingress: p.IngressAllowed,
		Monthly: monthly.String(), Yearly: yearly.String(),
		Limits: []views.BillingLimit{
			{Key: "clusters", LabelID: "BillingLimitClusters", Used: use.Clusters, Max: int64(p.MaxClusters)},
			{Key: "nodes", LabelID: "BillingLimitNodes", Used: use.MostNodes, Max: int64(p.MaxNodesPerCluster)},
			{Key: "hostnames", LabelID: "BillingLimitHostnames", Used: use.MostHostnames, Max: int64(p.MaxHostnamesPerCluster)},
		},
	}
	if locale.Lang(ctx) == locale.SimplifiedChinese.String() {
		if p.NameZh != "" {
			m.PlanName = p.NameZh
		}
		if p.DescriptionZh != "" {
			m.Description = p.DescriptionZh
		}
	}
	return render(c, http.StatusOK, views.BillingPage(m))
}

// apiBilling is GET /api/v1/billing.
type apiBilling struct {
	Plan  apiPlan  `json:"plan"`
	Usage apiUsage `json:"usage"`
}

type apiPlan struct {
	ID                     int64  `json:"id"`
	Name                   string `json:"name"`
	Default                bool   `json:"default"`
	MaxClusters            int32  `json:"max_clusters"`
	MaxNodesPerCluster     int32  `json:"max_nodes_per_cluster"`
	MaxHostnamesPerCluster int32  `json:"max_hostnames_per_cluster"`
	ManagedIngress         bool   `json:"managed_ingress"`
	Currency               string `json:"currency"`
	// Prices in the currency's minor units.
	PriceMonthly int64 `json:"price_monthly"`
	PriceYearly  int64 `json:"price_yearly"`
}

type apiUsage struct {
	Clusters int64 `json:"clusters"`
	// The most nodes and host names in any one cluster.
	MostNodesInACluster     int64 `json:"most_nodes_in_a_cluster"`
	MostHostnamesInACluster int64 `json:"most_hostnames_in_a_cluster"`
}

// showAPIBilling is GET /api/v1/billing: the key owner's plan, its limits
// and their usage.
func (h *Handlers) showAPIBilling(c echo.Context) error {
	u, _ := currentUser(c)
	use, err := h.Billing.UsageOf(c.Request().Context(), u.ID)
	if err != nil {
		return err
	}
	p := use.Plan
	return c.JSON(http.StatusOK, apiBilling{
		Plan: apiPlan{
			ID: p.ID, Name: p.Name, Default: p.IsDefault, MaxClusters: p.MaxClusters, MaxNodesPerCluster: p.MaxNodesPerCluster,
			MaxHostnamesPerCluster: p.MaxHostnamesPerCluster, ManagedIngress: p.IngressAllowed,
			Currency: p.Currency, PriceMonthly: p.PriceMonthly, PriceYearly: p.PriceYearly,
		},
		Usage: apiUsage{Clusters: use.Clusters, MostNodesInACluster: use.MostNodes, MostHostnamesInACluster: use.MostHostnames},
	})
}
