package handlers_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/ingress"
)

// ingressForm is a valid managed ingress form: Traefik from its default
// chart.
func ingressForm() url.Values {
	return url.Values{
		"controller": {ingress.Traefik}, "chartRepo": {""}, "chartVersion": {""}, "chartPath": {""},
		"appsBaseDomain": {"apps.example.com"}, "acmeServer": {ingress.LetsEncryptProduction}, "certManagerChartPath": {""},
	}
}

// fieldError matches a field's error message, at that field.
func fieldError(field, msg string) *regexp.Regexp {
	return regexp.MustCompile(`data-testid="error-` + regexp.QuoteMeta(field) + `"[^>]*>` + regexp.QuoteMeta(html.EscapeString(msg)) + `<`)
}

// TestAdminIngress: the admin sets the managed ingress settings on
// /admin/edge: they are stored as typed (the domain lower-cased) and
// audited with the fields that changed, ingress-nginx comes with a
// warning that upstream retired it, and users who are not admins cannot
// change them.
func TestAdminIngress(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "ingress-admin")
	user, _ := b.SignedUpUser(t, "ingress-user")

	resp := user.Post("/", "/admin/edge/ingress", ingressForm())
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, ingress.DefaultSettings(), b.IngressSettings(t))

	code, body := admin.Get("/admin/edge")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="ingress-form"`)
	require.Contains(t, body, `<option value="traefik" selected>`)
	require.NotContains(t, body, `data-testid="ingress-retired"`)
	require.Contains(t, body, fmt.Sprintf(`placeholder="%s"`, ingress.DefaultCharts[ingress.Traefik].Repo), "blank: the default")
	require.Contains(t, body, fmt.Sprintf(`placeholder="%s"`, ingress.DefaultCharts[ingress.Traefik].Version))

	chartDir := t.TempDir()
	form := url.Values{
		"controller": {ingress.IngressNGINX}, "chartRepo": {" oci://registry.example.com/charts "}, "chartVersion": {" 4.12.0 "},
		"chartPath": {chartDir}, "appsBaseDomain": {" Apps.Example.COM "}, "acmeServer": {ingress.LetsEncryptStaging},
		"certManagerChartPath": {" " + chartDir + " "}, "gatewayClass": {" eg "},
	}
	resp = admin.Post("/admin/edge", "/admin/edge/ingress", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, "/admin/edge#ingress", resp.Header.Get("Location"))
	require.Equal(t, ingress.Settings{
		Controller: ingress.IngressNGINX, ChartRepo: "oci://registry.example.com/charts", ChartVersion: "4.12.0",
		ChartPath: chartDir, AppsBaseDomain: "apps.example.com", ACMEServer: ingress.LetsEncryptStaging, CertManagerChartPath: chartDir,
		GatewayClass: "eg",
	}, b.IngressSettings(t))
	require.Equal(t, [][]string{{"acmeServer", "appsBaseDomain", "certManagerChartPath", "chartPath", "chartRepo", "chartVersion", "controller", "gatewayClass"}}, b.IngressAudits(t))

	_, body = admin.Get("/admin/edge")
	require.Contains(t, body, "Managed ingress settings saved.")
	require.Contains(t, body, `<option value="ingress-nginx" selected>`)
	require.Contains(t, body, `data-testid="ingress-retired"`)
	require.Contains(t, body, "Upstream retired ingress-nginx in March 2026")
	require.Contains(t, body, `value="apps.example.com"`)
	require.Contains(t, body, fmt.Sprintf(`placeholder="%s"`, ingress.DefaultCharts[ingress.IngressNGINX].Repo))

	// The same again changes nothing, and is not audited.
	resp = admin.Post("/admin/edge", "/admin/edge/ingress", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.Get("/admin/edge")
	require.Contains(t, body, "Nothing changed")
	require.Len(t, b.IngressAudits(t), 1)

	// Back to Traefik, from its default chart: the warning goes.
	resp = admin.Post("/admin/edge", "/admin/edge/ingress", ingressForm())
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, ingress.Settings{Controller: ingress.Traefik, AppsBaseDomain: "apps.example.com", ACMEServer: ingress.LetsEncryptProduction}, b.IngressSettings(t))
	require.Equal(t, []string{"acmeServer", "certManagerChartPath", "chartPath", "chartRepo", "chartVersion", "controller", "gatewayClass"}, b.IngressAudits(t)[1])
	_, body = admin.Get("/admin/edge")
	require.NotContains(t, body, `data-testid="ingress-retired"`)

	// Picked but not saved, ingress-nginx is warned about too.
	picked := ingressForm()
	picked.Set("controller", ingress.IngressNGINX)
	picked.Set("acmeServer", "acme.example.com")
	resp = admin.Post("/admin/edge", "/admin/edge/ingress", picked)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="ingress-retired"`)
}

// TestAdminIngressBadFields: each bad field is refused with its message at
// that field, what was typed kept, and nothing stored.
func TestAdminIngressBadFields(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "ingress-checker")

	tests := []struct {
		field, value, msg string
	}{
		{"controller", "haproxy", "Pick one of the listed ingress controllers."},
		{"chartRepo", "ftp://charts.example.com", "Enter the chart repository's URL (https://, http:// or oci://)."},
		{"chartVersion", "4.13 beta", "Enter a chart version without spaces or slashes, such as 41.6.0."},
		{"chartVersion", "stable/4.13", "Enter a chart version without spaces or slashes, such as 41.6.0."},
		{"chartPath", "/no/such/chart/directory", "No chart directory is at this path on the server."},
		{"certManagerChartPath", "/no/such/chart/directory", "No chart directory is at this path on the server."},
		{"appsBaseDomain", "apps_example..com", "Enter a domain name such as k8s.example.com."},
		{"acmeServer", "http://acme.example.com/directory", "Enter the ACME server's directory URL, starting with https://."},
		{"acmeServer", "", "Enter the ACME server's directory URL, starting with https://."},
		{"gatewayClass", "Envoy Gateway", "Enter a GatewayClass name: lower-case letters, digits, dots and dashes."},
	}
	for _, tt := range tests {
		t.Run(tt.field+"="+tt.value, func(t *testing.T) {
			form := ingressForm()
			form.Set(tt.field, tt.value)
			resp := admin.Post("/admin/edge", "/admin/edge/ingress", form)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			page := handlerstest.ReadBody(t, resp)
			require.Regexp(t, fieldError(tt.field, tt.msg), page)
			require.Contains(t, page, "Nothing was saved: fix the fields marked below.")
			require.Contains(t, page, `data-testid="dns-form"`, "the rest of the page is there")
			if tt.value != "" && tt.field != "controller" {
				require.Contains(t, page, `value="`+html.EscapeString(tt.value)+`"`, "what was typed is kept")
			}
		})
	}
	require.Equal(t, ingress.DefaultSettings(), b.IngressSettings(t))
	require.Empty(t, b.IngressAudits(t))
}

// TestAppsDomainOverlapsAPI: an apps base domain under the API base
// domain (or the same, or holding it) is refused when saved, at its
// field: the platform keeps the API domain's names for cluster APIs and
// would refuse every host name under it.
func TestAppsDomainOverlapsAPI(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t) // API base domain clusters.test
	admin, _ := b.SignedUpAdmin(t, "apps-domain")
	for _, apps := range []string{"apps.clusters.test", "clusters.test", "test"} {
		form := ingressForm()
		form.Set("appsBaseDomain", apps)
		resp := admin.Post("/admin/edge", "/admin/edge/ingress", form)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, apps)
		require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-appsBaseDomain">The apps base domain may not be the API base domain`)
	}
	require.Empty(t, b.IngressAudits(t))
	form := ingressForm()
	form.Set("appsBaseDomain", "apps.clusters-apps.test")
	resp := admin.Post("/admin/edge", "/admin/edge/ingress", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
}
