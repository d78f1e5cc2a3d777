package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/branding"
	"github.com/kubebyon/kubebyon/queries"
)

// adminAPI is an admin with an admin key, calling the admin API.
type adminAPI struct {
	b     *handlerstest.Bundle
	admin *handlerstest.Client
	email string
	key   string
}

func newAdminAPI(t *testing.T, b *handlerstest.Bundle, name string) adminAPI {
	t.Helper()
	admin, email := b.SignedUpAdmin(t, name)
	return adminAPI{b: b, admin: admin, email: email, key: admin.CreateScopedKey(name, "admin")}
}

// call calls the admin API with a JSON body ("" for none); want is the
// status expected. No answer holds any of the secrets.
func (a adminAPI) call(t *testing.T, method, path, body string, want int, secrets ...string) handlerstest.APIResponse {
	t.Helper()
	r := a.b.APICall(t, method, "/api/v1/admin"+path, a.key, body)
	require.Equal(t, want, r.Status, "%s %s: %s", method, path, r.Body)
	for _, s := range secrets {
		require.NotContains(t, r.Body, s, "%s %s answers a secret", method, path)
	}
	return r
}

// get reads path as a T.
func get[T any](t *testing.T, a adminAPI, path string, secrets ...string) T {
	t.Helper()
	return handlerstest.DecodeAs[T](t, a.call(t, http.MethodGet, path, "", http.StatusOK, secrets...))
}

// patchAs changes path with body and reads the answer as a T.
func patchAs[T any](t *testing.T, a adminAPI, path, body string, secrets ...string) T {
	t.Helper()
	return handlerstest.DecodeAs[T](t, a.call(t, http.MethodPatch, path, body, http.StatusOK, secrets...))
}

// requireInvalid checks that method path with body is 422 naming field
// (and only the fields named).
func (a adminAPI) requireInvalid(t *testing.T, method, path, body string, fields ...string) {
	t.Helper()
	r := a.call(t, method, path, body, http.StatusUnprocessableEntity)
	e := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r)
	require.Equal(t, "invalid", e.Error.Code, r.Body)
	require.ElementsMatch(t, fields, handlerstest.MapKeys(toAny(e.Error.Fields)), "%s %s %s: %s", method, path, body, r.Body)
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// audited counts the audit events of action the admin is the actor of.
func (a adminAPI) audited(t *testing.T, action string) int {
	t.Helper()
	return countRows(t, a.b, "SELECT count(*) FROM audit_events WHERE action = $1 AND actor_email = $2", action, a.email)
}

// put sends body as the content type to the admin API.
func (a adminAPI) put(t *testing.T, path, contentType string, body []byte) handlerstest.APIResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, a.b.Server.URL+"/api/v1/admin"+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return handlerstest.APIResponse{Status: resp.StatusCode, Header: resp.Header, Body: handlerstest.ReadBody(t, resp)}
}

type apiSettingsJSON struct {
	ChartRepo            string   `json:"chart_repo"`
	DefaultAccessMode    string   `json:"default_access_mode"`
	AllowedVersions      []string `json:"allowed_versions"`
	NodePortMin          int      `json:"node_port_min"`
	NodePortMax          int      `json:"node_port_max"`
	APIBaseDomain        string   `json:"api_base_domain"`
	PlatformAccessKeySet bool     `json:"platform_access_key_set"`
	HostKubeconfigSet    bool     `json:"host_kubeconfig_set"`
	Host                 struct {
		Source string `json:"source"`
	} `json:"host"`
}

// TestAPIAdminSettings: the runtime settings are read and changed with an
// admin key, the default public access mode among them, through the
// back office's validation and audit; the secrets are never answered and
// stay when a change leaves them out; no password is asked.
func TestAPIAdminSettings(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	a := newAdminAPI(t, b, "ops")
	const accessKey = "platform-access-key-0123456789"

	st := get[apiSettingsJSON](t, a, "/settings")
	require.Equal(t, "nodeport", st.DefaultAccessMode)
	require.False(t, st.PlatformAccessKeySet)
	require.False(t, st.HostKubeconfigSet)

	st = patchAs[apiSettingsJSON](t, a, "/settings", `{"default_access_mode": "loadbalancer", "api_base_domain": " K8s.Example.COM ",
		"allowed_versions": ["v1.34.1", "v1.33.5"], "platform_host": "platform.example.com", "platform_access_key": "`+accessKey+`"}`, accessKey)
	require.Equal(t, "loadbalancer", st.DefaultAccessMode)
	require.Equal(t, "k8s.example.com", st.APIBaseDomain)
	require.Equal(t, []string{"v1.34.1", "v1.33.5"}, st.AllowedVersions)
	require.True(t, st.PlatformAccessKeySet)
	require.Equal(t, st, get[apiSettingsJSON](t, a, "/settings", accessKey))
	_, page := a.admin.Get(handlerstest.SettingsPage)
	require.Regexp(t, `<option value="loadbalancer" selected`, page)
	require.Equal(t, accessKey, b.LoadSettings(t).PlatformAccessKey)
	events := b.AuditEvents(t, "admin.settings_update")
	require.Len(t, events, 1)
	require.Equal(t, "replaced", events[0]["platformAccessKey"])
	require.NotContains(t, b.AuditDetails(t, "admin.settings_update")[0], accessKey)
	require.Equal(t, 1, a.audited(t, "admin.settings_update"))

	// A change that leaves the secret out keeps it; "" clears it.
	st = patchAs[apiSettingsJSON](t, a, "/settings", `{"node_port_min": 31000, "node_port_max": 31999}`, accessKey)
	require.Equal(t, 31000, st.NodePortMin)
	require.True(t, st.PlatformAccessKeySet)
	require.Equal(t, accessKey, b.LoadSettings(t).PlatformAccessKey)
	st = patchAs[apiSettingsJSON](t, a, "/settings", `{"platform_access_key": ""}`)
	require.False(t, st.PlatformAccessKeySet)
	require.Equal(t, "cleared", b.AuditEvents(t, "admin.settings_update")[2]["platformAccessKey"])

	// Invalid values are 422 at their fields, and change nothing.
	for _, tt := range []struct {
		body   string
		fields []string
	}{
		{`{"default_access_mode": "ingress"}`, []string{"default_access_mode"}},
		{`{"node_port_min": 32000, "node_port_max": 31000}`, []string{"node_port_min", "node_port_max"}},
		{`{"pod_cidr": "10.0.0.0", "chart_repo": "ftp://charts"}`, []string{"pod_cidr", "chart_repo"}},
		{`{"allowed_versions": []}`, []string{"allowed_versions"}},
		{`{"host_kubeconfig": "not a kubeconfig"}`, []string{"host_kubeconfig"}},
	} {
		a.requireInvalid(t, http.MethodPatch, "/settings", tt.body, tt.fields...)
	}
	a.call(t, http.MethodPatch, "/settings", `{"default_access_mode": "nodeport", "surprise": 1}`, http.StatusBadRequest)
	require.Equal(t, st, get[apiSettingsJSON](t, a, "/settings"))
	require.Len(t, b.AuditEvents(t, "admin.settings_update"), 3)

	// The connection test: a kubeconfig given (not stored), then what is
	// configured.
	kubeconfig := strings.ReplaceAll(unreachableKubeconfig, "ADDR", handlerstest.ClosedPort(t))
	test := handlerstest.DecodeAs[struct {
		Source      string `json:"source"`
		Reached     bool   `json:"reached"`
		Error       string `json:"error"`
		Permissions []any  `json:"permissions"`
	}](t, a.call(t, http.MethodPost, "/settings/test", `{"host_kubeconfig": `+quote(kubeconfig)+`}`, http.StatusOK))
	require.Equal(t, "upload", test.Source)
	require.False(t, test.Reached)
	require.Contains(t, test.Error, "Cannot reach the host cluster")
	require.Empty(t, test.Permissions)
	require.False(t, get[apiSettingsJSON](t, a, "/settings").HostKubeconfigSet, "a test stores nothing")
	r := a.call(t, http.MethodPost, "/settings/test", "", http.StatusOK)
	require.Contains(t, r.Body, `"reached":false`)
	a.requireInvalid(t, http.MethodPost, "/settings/test", `{"host_kubeconfig": "not a kubeconfig"}`, "host_kubeconfig")
}

// unreachableKubeconfig names a server at ADDR, with a token.
const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: host
  cluster:
    server: https://ADDR
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: secret-token
contexts:
- name: host
  context: {cluster: host, user: admin}
current-context: host
`

// quote is s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

type apiBrandingJSON struct {
	ProductName          string  `json:"product_name"`
	SupportContact       string  `json:"support_contact"`
	DefaultLanguage      string  `json:"default_language"`
	SessionLifetimeHours int     `json:"session_lifetime_hours"`
	IdleTimeoutMinutes   int     `json:"idle_timeout_minutes"`
	LogoURL              *string `json:"logo_url"`
}

// TestAPIAdminBranding: the branding and session settings change with an
// admin key and show on the console's pages at once; the logo is uploaded
// as the request's body, checked and bounded as the back office's upload,
// and removed.
func TestAPIAdminBranding(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	a := newAdminAPI(t, b, "brand")

	st := get[apiBrandingJSON](t, a, "/settings/branding")
	require.Equal(t, apiBrandingJSON{ProductName: "KubeBYON", DefaultLanguage: "en", SessionLifetimeHours: 14 * 24, IdleTimeoutMinutes: 3 * 24 * 60}, st)

	st = patchAs[apiBrandingJSON](t, a, "/settings/branding", `{"product_name": " Acme Cloud ", "support_contact": "help@acme.example",
		"session_lifetime_hours": 24, "idle_timeout_minutes": 60}`)
	require.Equal(t, apiBrandingJSON{ProductName: "Acme Cloud", SupportContact: "help@acme.example", DefaultLanguage: "en", SessionLifetimeHours: 24, IdleTimeoutMinutes: 60}, st)
	require.Equal(t, st, get[apiBrandingJSON](t, a, "/settings/branding"))
	_, page := b.Client(t).Get("/")
	require.Contains(t, page, "<strong>Acme Cloud</strong>")
	require.Equal(t, []any{"idleTimeout", "productName", "sessionLifetime", "supportContact"}, b.BrandingEvents(t)[0]["changed"])
	require.Equal(t, 1, a.audited(t, branding.ActionUpdate))

	for _, tt := range []struct {
		body   string
		fields []string
	}{
		{`{"product_name": "  "}`, []string{"product_name"}},
		{`{"idle_timeout_minutes": 5}`, []string{"idle_timeout_minutes"}},
		{`{"session_lifetime_hours": 0, "idle_timeout_minutes": 60}`, []string{"session_lifetime_hours"}},
		{`{"session_lifetime_hours": 9223372036854775807}`, []string{"session_lifetime_hours"}},
		{`{"default_language": "fr", "support_contact": "not a contact"}`, []string{"default_language", "support_contact"}},
	} {
		a.requireInvalid(t, http.MethodPatch, "/settings/branding", tt.body, tt.fields...)
	}
	require.Equal(t, st, get[apiBrandingJSON](t, a, "/settings/branding"))

	// The logo.
	var logo bytes.Buffer
	require.NoError(t, png.Encode(&logo, image.NewGray(image.Rect(0, 0, 32, 16))))
	for _, bad := range []struct {
		name, contentType string
		body              []byte
		status            int
	}{
		{"not an image", "image/png", []byte("just text"), http.StatusUnprocessableEntity},
		{"too large", "image/png", append(bytes.Clone(logo.Bytes()), make([]byte, branding.MaxLogoBytes)...), http.StatusUnprocessableEntity},
		{"script in an SVG", "image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), http.StatusUnprocessableEntity},
		{"not a logo's type", "text/plain", logo.Bytes(), http.StatusUnsupportedMediaType},
		{"JSON", "application/json", []byte(`{}`), http.StatusUnsupportedMediaType},
	} {
		r := a.put(t, "/settings/branding/logo", bad.contentType, bad.body)
		require.Equal(t, bad.status, r.Status, "%s: %s", bad.name, r.Body)
		if bad.status == http.StatusUnprocessableEntity {
			require.Contains(t, handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields, "logo", bad.name)
		}
	}
	r := a.put(t, "/settings/branding/logo", "image/png", logo.Bytes())
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	st = handlerstest.DecodeAs[apiBrandingJSON](t, r)
	require.NotNil(t, st.LogoURL)
	require.Equal(t, "Acme Cloud", st.ProductName, "the rest is kept")
	resp, served := b.Client(t).Fetch(*st.LogoURL, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, logo.Bytes(), served)
	_, page = b.Client(t).Get("/")
	require.Contains(t, page, `<img src="`+*st.LogoURL+`"`)

	st = handlerstest.DecodeAs[apiBrandingJSON](t, a.call(t, http.MethodDelete, "/settings/branding/logo", "", http.StatusOK))
	require.Nil(t, st.LogoURL)
	status, _ := b.Client(t).Get("/branding/logo")
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, 3, a.audited(t, branding.ActionUpdate))
}

type apiBillingSettingsJSON struct {
	Methods                []string `json:"methods"`
	ManualInstructions     string   `json:"manual_instructions"`
	OrderExpiryHours       int      `json:"order_expiry_hours"`
	GraceDays              int      `json:"grace_days"`
	TaxLabel               string   `json:"tax_label"`
	TaxRateBasisPoints     int      `json:"tax_rate_basis_points"`
	StripeMethods          []string `json:"stripe_methods"`
	StripeSecretKeySet     bool     `json:"stripe_secret_key_set"`
	StripeWebhookSecretSet bool     `json:"stripe_webhook_secret_set"`
}

type apiMetricsSettingsJSON struct {
	IntervalSeconds         int     `json:"interval_seconds"`
	RawRetentionHours       int     `json:"raw_retention_hours"`
	FiveMinuteRetentionDays int     `json:"five_minute_retention_days"`
	HourlyRetentionDays     int     `json:"hourly_retention_days"`
	AlertErrorRate          float64 `json:"alert_error_rate"`
	AlertLatencyP99Ms       int     `json:"alert_latency_p99_ms"`
}

// TestAPIAdminBillingAndMetricsSettings: the billing settings (the Stripe
// keys never answered, kept when left out) and the metrics settings
// change with an admin key, through the back office's validation.
func TestAPIAdminBillingAndMetricsSettings(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	a := newAdminAPI(t, b, "cashier")
	const stripeKey, webhookSecret = "sk_test_0123456789abcdef", "whsec_0123456789abcdef"

	st := get[apiBillingSettingsJSON](t, a, "/settings/billing")
	require.Equal(t, apiBillingSettingsJSON{Methods: []string{}, OrderExpiryHours: 72, GraceDays: 3, StripeMethods: []string{"card"}}, st)

	st = patchAs[apiBillingSettingsJSON](t, a, "/settings/billing", `{"methods": ["manual", "manual"], "manual_instructions": "Pay to IBAN XX00 0000",
		"tax_label": "VAT", "tax_rate_basis_points": 825}`)
	require.Equal(t, []string{"manual"}, st.Methods)
	require.Equal(t, 825, st.TaxRateBasisPoints)
	_, page := a.admin.Get("/admin/billing")
	require.Contains(t, page, "Pay to IBAN XX00 0000")
	require.Contains(t, page, `value="8.25"`)

	a.requireInvalid(t, http.MethodPatch, "/settings/billing", `{"methods": ["manual", "stripe"]}`, "stripe_secret_key", "stripe_webhook_secret")
	a.requireInvalid(t, http.MethodPatch, "/settings/billing", `{"tax_rate_basis_points": 20000, "order_expiry_hours": 0}`, "tax_rate_basis_points", "order_expiry_hours")
	a.requireInvalid(t, http.MethodPatch, "/settings/billing", `{"methods": ["cash"]}`, "methods")

	st = patchAs[apiBillingSettingsJSON](t, a, "/settings/billing", `{"methods": ["manual", "stripe"], "stripe_methods": ["card", "alipay"],
		"stripe_secret_key": "`+stripeKey+`", "stripe_webhook_secret": "`+webhookSecret+`"}`, stripeKey, webhookSecret)
	require.True(t, st.StripeSecretKeySet)
	require.True(t, st.StripeWebhookSecretSet)
	require.Equal(t, []string{"card", "alipay"}, st.StripeMethods)
	st = patchAs[apiBillingSettingsJSON](t, a, "/settings/billing", `{"grace_days": 5, "stripe_secret_key": ""}`, stripeKey, webhookSecret)
	require.Equal(t, 5, st.GraceDays)
	require.True(t, st.StripeSecretKeySet, "an empty key keeps the stored one")
	require.Equal(t, st, get[apiBillingSettingsJSON](t, a, "/settings/billing", stripeKey, webhookSecret))
	stored, err := billing.LoadSettings(context.Background(), queries.New(b.Pool), b.Box)
	require.NoError(t, err)
	require.Equal(t, stripeKey, stored.StripeSecretKey)
	require.Equal(t, 3, a.audited(t, "billing.settings"))
	require.Zero(t, countRows(t, b, "SELECT count(*) FROM audit_events WHERE details::text LIKE '%' || $1 || '%'", stripeKey))

	m := get[apiMetricsSettingsJSON](t, a, "/settings/metrics")
	require.Equal(t, apiMetricsSettingsJSON{IntervalSeconds: 60, RawRetentionHours: 48, FiveMinuteRetentionDays: 30, HourlyRetentionDays: 365, AlertErrorRate: 1, AlertLatencyP99Ms: 1000}, m)
	m = patchAs[apiMetricsSettingsJSON](t, a, "/settings/metrics", `{"interval_seconds": 30, "alert_error_rate": 2.5}`)
	require.Equal(t, 30, m.IntervalSeconds)
	require.InEpsilon(t, 2.5, m.AlertErrorRate, 1e-9)
	require.Equal(t, 365, m.HourlyRetentionDays, "the rest is kept")
	require.Equal(t, m, get[apiMetricsSettingsJSON](t, a, "/settings/metrics"))
	_, page = a.admin.Get("/admin/metrics")
	require.Contains(t, page, `value="2.5"`)
	a.requireInvalid(t, http.MethodPatch, "/settings/metrics", `{"interval_seconds": 5}`, "interval_seconds")
	a.requireInvalid(t, http.MethodPatch, "/settings/metrics", `{"hourly_retention_days": 7, "alert_latency_p99_ms": -1}`, "hourly_retention_days", "alert_latency_p99_ms")
	require.Equal(t, m, get[apiMetricsSettingsJSON](t, a, "/settings/metrics"))
	require.Equal(t, 1, a.audited(t, "metrics.settings"))
}
