package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/views"
)

// dashboardClusters is how many of the newest clusters the dashboard lists.
const dashboardClusters = 5

// showHomePage is the landing page, or the dashboard for a signed-in user.
func (h *Handlers) showHomePage(c echo.Context) error {
	u, ok := currentUser(c)
	if !ok {
		return render(c, http.StatusOK, views.Home())
	}
	if h.mustChangePassword(c, u) {
		return h.toPasswordForm(c)
	}
	ctx := c.Request().Context()
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	if u.Role == adminauth.RoleAdmin {
		views.PageOf(ctx).LoopbackBaseURL = h.loopbackBaseURL()
	}
	list, total, err := h.Clusters.Dashboard(ctx, who, dashboardClusters)
	if err != nil {
		return err
	}
	d := views.DashboardClusters{Clusters: make([]views.Cluster, len(list)), Total: total}
	for i, cl := range list {
		d.Clusters[i] = clusterSummaryView(cl)
	}
	h.viewAsAPICall(c, "listClusters", nil)
	return render(c, http.StatusOK, views.Dashboard(u.Name, d))
}

// showStatus is the status panel fragment the home page loads with htmx.
func (h *Handlers) showStatus(c echo.Context) error {
	_, err := h.ready(c.Request().Context())
	if err != nil {
		h.Logger.WarnContext(c.Request().Context(), "platform not ready", "error", err)
	}
	return render(c, http.StatusOK, views.Status(err == nil))
}
