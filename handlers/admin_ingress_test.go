package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// ingressForm is a valid managed ingress form: Traefik from its default
// chart.
func ingressForm() url.Values {
	return url.Values{
		"controller": {ingress.Traefik}, "chartRepo": {""}, "chartVersion": {""}, "chartPath": {""},
		"appsBaseDomain": {"apps.example.com"}, "acmeServer": {ingress.LetsEncryptProduction}, "certManagerChartPath": {""},
	}
}

// ingressAudits are the changed fields of each managed ingress settings
// event, oldest first.
func (b *testBundle) ingressAudits(t *testing.T) [][]string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(),
		"SELECT details->'changed' FROM audit_events WHERE action = 'admin.ingress_update' AND target_id = 'ingress' ORDER BY id")
	require.NoError(t, err)
	var out [][]string
	for rows.Next() {
		var raw []byte
		require.NoError(t, rows.Scan(&raw))
		var changed []string
		require.NoError(t, json.Unmarshal(raw, &changed))
		out = append(out, changed)
	}
	require.NoError(t, rows.Err())
	return out
}

func (b *testBundle) ingressSettings(t *testing.T) ingress.Settings {
	t.Helper()
	s, err := ingress.LoadSettings(context.Background(), queries.New(b.pool))
	require.NoError(t, err)
	return s
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
	b := setup(t)
	admin, _ := b.signedUpAdmin(t, "ingress-admin")
	user, _ := b.signedUpUser(t, "ingress-user")

	resp := user.post("/", "/admin/edge/ingress", ingressForm())
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, ingress.DefaultSettings(), b.ingressSettings(t))

	code, body := admin.get("/admin/edge")
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
	resp = admin.post("/admin/edge", "/admin/edge/ingress", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, "/admin/edge#ingress", resp.Header.Get("Location"))
	require.Equal(t, ingress.Settings{
		Controller: ingress.IngressNGINX, ChartRepo: "oci://registry.example.com/charts", ChartVersion: "4.12.0",
		ChartPath: chartDir, AppsBaseDomain: "apps.example.com", ACMEServer: ingress.LetsEncryptStaging, CertManagerChartPath: chartDir,
		GatewayClass: "eg",
	}, b.ingressSettings(t))
	require.Equal(t, [][]string{{"acmeServer", "appsBaseDomain", "certManagerChartPath", "chartPath", "chartRepo", "chartVersion", "controller", "gatewayClass"}}, b.ingressAudits(t))

	_, body = admin.get("/admin/edge")
	require.Contains(t, body, "Managed ingress settings saved.")
	require.Contains(t, body, `<option value="ingress-nginx" selected>`)
	require.Contains(t, body, `data-testid="ingress-retired"`)
	require.Contains(t, body, "Upstream retired ingress-nginx in March 2026")
	require.Contains(t, body, `value="apps.example.com"`)
	require.Contains(t, body, fmt.Sprintf(`placeholder="%s"`, ingress.DefaultCharts[ingress.IngressNGINX].Repo))

	// The same again changes nothing, and is not audited.
	resp = admin.post("/admin/edge", "/admin/edge/ingress", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.get("/admin/edge")
	require.Contains(t, body, "Nothing changed")
	require.Len(t, b.ingressAudits(t), 1)

	// Back to Traefik, from its default chart: the warning goes.
	resp = admin.post("/admin/edge", "/admin/edge/ingress", ingressForm())
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, ingress.Settings{Controller: ingress.Traefik, AppsBaseDomain: "apps.example.com", ACMEServer: ingress.LetsEncryptProduction}, b.ingressSettings(t))
	require.Equal(t, []string{"acmeServer", "certManagerChartPath", "chartPath", "chartRepo", "chartVersion", "controller", "gatewayClass"}, b.ingressAudits(t)[1])
	_, body = admin.get("/admin/edge")
	require.NotContains(t, body, `data-testid="ingress-retired"`)

	// Picked but not saved, ingress-nginx is warned about too.
	picked := ingressForm()
	picked.Set("controller", ingress.IngressNGINX)
	picked.Set("acmeServer", "acme.example.com")
	resp = admin.post("/admin/edge", "/admin/edge/ingress", picked)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), `data-testid="ingress-retired"`)
}

// TestAdminIngressBadFields: each bad field is refused with its message at
// that field, what was typed kept, and nothing stored.
func TestAdminIngressBadFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, _ := b.signedUpAdmin(t, "ingress-checker")

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
			resp := admin.post("/admin/edge", "/admin/edge/ingress", form)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			page := readBody(t, resp)
			require.Regexp(t, fieldError(tt.field, tt.msg), page)
			require.Contains(t, page, "Nothing was saved: fix the fields marked below.")
			require.Contains(t, page, `data-testid="dns-form"`, "the rest of the page is there")
			if tt.value != "" && tt.field != "controller" {
				require.Contains(t, page, `value="`+html.EscapeString(tt.value)+`"`, "what was typed is kept")
			}
		})
	}
	require.Equal(t, ingress.DefaultSettings(), b.ingressSettings(t))
	require.Empty(t, b.ingressAudits(t))
}

// TestAdminIngressInBrowser: in the browser, at a phone's width and a
// laptop's, the admin picks ingress-nginx and saves; the page warns that
// upstream retired it, and nothing of the section sticks out of the
// screen.
func TestAdminIngressInBrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, email := b.signedUpAdmin(t, "ingress-clicker")
	for _, width := range []int64{390, 1280} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			ctx := testenv.Browser(t)
			require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(width, 900)))
			browserSignIn(t, ctx, b.server.URL, email, "password of ingress-clicker")
			domain := fmt.Sprintf("apps%d.example.com", width)
			var out []string
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Navigate(b.server.URL+"/admin/edge"),
				chromedp.WaitVisible(`[data-testid="ingress-form"]`, chromedp.ByQuery),
				chromedp.SetValue(`[data-testid="ingress-controller"]`, ingress.IngressNGINX, chromedp.ByQuery),
				chromedp.SetValue(`[data-testid="ingress-apps-base-domain"]`, domain, chromedp.ByQuery),
				chromedp.Click(`[data-testid="ingress-save"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`[data-testid="ingress-retired"]`, chromedp.ByQuery),
				chromedp.Evaluate(overflowing, &out),
			))
			require.Empty(t, out, "/admin/edge at %dpx", width)
			require.Equal(t, ingress.IngressNGINX, b.ingressSettings(t).Controller)
			require.Equal(t, domain, b.ingressSettings(t).AppsBaseDomain)
		})
	}
}

// TestAppsDomainOverlapsAPI: an apps base domain under the API base
// domain (or the same, or holding it) is refused when saved, at its
// field: the platform keeps the API domain's names for cluster APIs and
// would refuse every host name under it.
func TestAppsDomainOverlapsAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t) // API base domain clusters.test
	admin, _ := b.signedUpAdmin(t, "apps-domain")
	for _, apps := range []string{"apps.clusters.test", "clusters.test", "test"} {
		form := ingressForm()
		form.Set("appsBaseDomain", apps)
		resp := admin.post("/admin/edge", "/admin/edge/ingress", form)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, apps)
		require.Contains(t, readBody(t, resp), `data-testid="error-appsBaseDomain">The apps base domain may not be the API base domain`)
	}
	require.Empty(t, b.ingressAudits(t))
	form := ingressForm()
	form.Set("appsBaseDomain", "apps.clusters-apps.test")
	resp := admin.post("/admin/edge", "/admin/edge/ingress", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
}
