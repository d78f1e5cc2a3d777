package handlers

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/views"
)

// ingressFields are the managed ingress form's fields.
var ingressFields = []string{"controller", "chartRepo", "chartVersion", "chartPath", "appsBaseDomain", "acmeServer", "certManagerChartPath", "gatewayClass"}

// ingressForm is the stored settings as the form shows them.
func ingressForm(s ingress.Settings) views.Form {
	f := views.NewForm()
	f.Values = map[string]string{
		"controller": s.Controller, "chartRepo": s.ChartRepo, "chartVersion": s.ChartVersion,
		"chartPath": s.ChartPath, "appsBaseDomain": s.AppsBaseDomain, "acmeServer": s.ACMEServer,
		"certManagerChartPath": s.CertManagerChartPath, "gatewayClass": s.GatewayClass,
	}
	return f
}

// ingressSettingsFrom reads the submitted managed ingress form.
func ingressSettingsFrom(c echo.Context) (views.Form, ingress.Settings) {
	f := formFrom(c, ingressFields...)
	for _, k := range ingressFields {
		f.Values[k] = strings.TrimSpace(f.Values[k])
	}
	f.Values["appsBaseDomain"] = strings.ToLower(f.Values["appsBaseDomain"])
	return f, ingress.Settings{
		Controller: f.Value("controller"), ChartRepo: f.Value("chartRepo"), ChartVersion: f.Value("chartVersion"),
		ChartPath: f.Value("chartPath"), AppsBaseDomain: f.Value("appsBaseDomain"), ACMEServer: f.Value("acmeServer"),
		CertManagerChartPath: f.Value("certManagerChartPath"), GatewayClass: f.Value("gatewayClass"),
	}
}

// saveAdminIngress is POST /admin/edge/ingress.
func (h *Handlers) saveAdminIngress(c echo.Context) error {
	f, next := ingressSettingsFrom(c)
	changed, err := h.Ingress.UpdateSettings(c.Request().Context(), next, actor(c))
	if err != nil {
		return adminSaveError(c, err, &f, "ErrAdminSettingsNotSaved", nil, func(status int) error {
			return h.renderAdminEdge(c, status, adminEdgeForms{ingress: &f})
		})
	}
	if len(changed) == 0 {
		h.flash(c, "FlashAdminSettingsUnchanged")
	} else {
		h.flash(c, "AdminIngressSaved")
	}
	return redirect(c, "/admin/edge#ingress")
}
