package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// apiEdgeToken is an edge token of the admin API.
type apiEdgeToken struct {
	ID        int64   `json:"id"`
	Name      string  `json:"name"`
	Prefix    string  `json:"prefix"`
	RevokedAt *string `json:"revoked_at"`
	Token     string  `json:"token"`
	Command   string  `json:"command"`
}

// apiAdminEdge is the admin API's edge overview, as far as the tests
// read it.
type apiAdminEdge struct {
	Version string `json:"version"`
	Edges   []struct {
		Name           string `json:"name"`
		Token          string `json:"token"`
		HAProxyVersion string `json:"haproxy_version"`
		InStep         bool   `json:"in_step"`
		BackendsUp     int    `json:"backends_up"`
		BackendsDown   int    `json:"backends_down"`
	} `json:"edges"`
	RouteAgents []struct {
		Node    string `json:"node"`
		Token   string `json:"token"`
		InPlace int    `json:"in_place"`
		Failed  int    `json:"failed"`
	} `json:"route_agents"`
}

// TestAPIAdminEdge: an admin key makes an edge token (its value and
// command shown in that answer alone), which the edges and route agents
// then report with, as the edge overview shows; lists the tokens a page
// at a time and revokes one, whose edges then get 401. A bad name is 422,
// an unknown token 404; every change is audited as the admin's.
func TestAPIAdminEdge(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, adminEmail := b.SignedUpAdmin(t, "api-edge-admin")
	key := admin.CreateScopedKey("ops", "admin")

	r := b.APICall(t, http.MethodGet, "/api/v1/admin/edge", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	overview := handlerstest.DecodeAs[apiAdminEdge](t, r)
	require.Empty(t, overview.Edges)
	require.Empty(t, overview.RouteAgents)

	for _, tt := range []struct {
		body   string
		status int
	}{
		{`{"name":" "}`, http.StatusUnprocessableEntity},
		{`{"name":"` + strings.Repeat("e", 101) + `"}`, http.StatusUnprocessableEntity},
		{`{"name":"edge-a","scope":"all"}`, http.StatusBadRequest},
	} {
		r := b.APICall(t, http.MethodPost, "/api/v1/admin/edge/tokens", key, tt.body)
		require.Equal(t, tt.status, r.Status, r.Body)
		if tt.status == http.StatusUnprocessableEntity {
			require.Contains(t, handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields, "name")
		}
	}

	r = b.APICall(t, http.MethodPost, "/api/v1/admin/edge/tokens", key, `{"name":"edge-a"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	a := handlerstest.DecodeAs[apiEdgeToken](t, r)
	require.Equal(t, fmt.Sprintf("/api/v1/admin/edge/tokens/%d", a.ID), r.Header.Get("Location"))
	require.True(t, strings.HasPrefix(a.Token, a.Prefix), a.Token)
	require.Equal(t, fmt.Sprintf("KUBEBYON_EDGE_TOKEN=%s kubebyon edge --platform-url %s", a.Token, b.Server.URL), a.Command)
	r = b.APICall(t, http.MethodGet, r.Header.Get("Location"), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.NotContains(t, r.Body, a.Token, "the value is shown once")
	require.Equal(t, apiEdgeToken{ID: a.ID, Name: "edge-a", Prefix: a.Prefix}, handlerstest.DecodeAs[apiEdgeToken](t, r))

	// An edge and a route agent report with it.
	report := `{"name":"edge-a","haproxy_version":"2.6.12","applied_version":"abc","backends_up":3,"backends_down":1,"last_error":""}`
	r = b.APICall(t, http.MethodPost, "/api/v1/edge/status", a.Token, report)
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	routes := `{"node":"host-1","version":"v","in_place":2,"added":0,"replaced":0,"removed":0,"failed":{"10.128.9.0/24":"unreachable"},"error":""}`
	r = b.APICall(t, http.MethodPost, "/api/v1/edge/routes/status", a.Token, routes)
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	r = b.APICall(t, http.MethodGet, "/api/v1/admin/edge", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	overview = handlerstest.DecodeAs[apiAdminEdge](t, r)
	require.NotEmpty(t, overview.Version)
	require.Len(t, overview.Edges, 1)
	e := overview.Edges[0]
	require.Equal(t, "edge-a", e.Name)
	require.Equal(t, "edge-a", e.Token)
	require.Equal(t, "2.6.12", e.HAProxyVersion)
	require.False(t, e.InStep, "it applied another version")
	require.Equal(t, 3, e.BackendsUp)
	require.Equal(t, 1, e.BackendsDown)
	require.Len(t, overview.RouteAgents, 1)
	require.Equal(t, "host-1", overview.RouteAgents[0].Node)
	require.Equal(t, 2, overview.RouteAgents[0].InPlace)
	require.Equal(t, 1, overview.RouteAgents[0].Failed)

	// A page at a time, newest first, revoked ones too.
	r = b.APICall(t, http.MethodPost, "/api/v1/admin/edge/tokens", key, `{"name":"edge-b"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	var names []string
	for _, tk := range allPages[apiEdgeToken](t, b, key, "/api/v1/admin/edge/tokens?limit=1", "edge_tokens", 1) {
		require.Empty(t, tk.Token, "the value is shown once")
		names = append(names, tk.Name)
	}
	require.Equal(t, []string{"edge-b", "edge-a"}, names)

	// Revoked: its edges are refused and leave the overview; again, nothing changes.
	tokenPath := fmt.Sprintf("/api/v1/admin/edge/tokens/%d", a.ID)
	r = b.APICall(t, http.MethodDelete, tokenPath, key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	revoked := handlerstest.DecodeAs[apiEdgeToken](t, r)
	require.NotNil(t, revoked.RevokedAt)
	require.Equal(t, http.StatusUnauthorized, b.APICall(t, http.MethodGet, "/api/v1/edge/config", a.Token, "").Status)
	r = b.APICall(t, http.MethodDelete, tokenPath, key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, revoked, handlerstest.DecodeAs[apiEdgeToken](t, r))
	r = b.APICall(t, http.MethodGet, "/api/v1/admin/edge", key, "")
	require.Empty(t, handlerstest.DecodeAs[apiAdminEdge](t, r).Edges)
	_, body := admin.Get("/admin/edge")
	row := body[strings.Index(body, fmt.Sprintf(`data-token-id="%d"`, a.ID)):]
	require.Contains(t, row[:strings.Index(row, "</tr>")], `data-testid="edge-token-revoked"`)
	audits := b.Audits(t, b.UserID(t, adminEmail))
	require.Equal(t, 2, countOf(audits, "edge_token.create"))
	require.Equal(t, 1, countOf(audits, "edge_token.revoke"), "revoking again writes nothing")

	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		r := b.APICall(t, method, "/api/v1/admin/edge/tokens/999999", key, "")
		require.Equal(t, http.StatusNotFound, r.Status, method)
		require.Equal(t, "Edge token not found", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Message)
	}
}

// countOf is how many times s is in list.
func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// setAPIBaseDomain sets the platform's API base domain, which the DNS
// names and the apps domain are checked against.
func setAPIBaseDomain(t *testing.T, b *handlerstest.Bundle, domain string) {
	t.Helper()
	rt := settings.Defaults()
	rt.APIBaseDomain = domain
	require.NoError(t, settings.Save(context.Background(), queries.New(b.Pool), b.Box, rt))
}

// TestAPIAdminDNS: an admin key saves the DNS settings as the back office
// does, but with no password for the TSIG secret, which is never shown
// and kept when a save leaves it out; absent fields take their defaults;
// bad fields are 422 by their API names; the check reports on the real
// DNS server, and has nothing to check in mode none (409).
func TestAPIAdminDNS(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	setAPIBaseDomain(t, b, "clusters.test")
	srv := testenv.Knot(t, "clusters.test")
	admin, adminEmail := b.SignedUpAdmin(t, "api-dns-admin")
	key := admin.CreateScopedKey("ops", "admin")

	r := b.APICall(t, http.MethodGet, "/api/v1/admin/edge/dns", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, `{"mode":"none","addresses":[],"resolver":"","server":"","zone":"","key_name":"","key_algorithm":"hmac-sha256",
		"key_secret_set":false,"key_secret_unreadable":false,"ttl":60,"namespace":"kubebyon-dns"}`, r.Body)
	r = b.APICall(t, http.MethodPost, "/api/v1/admin/edge/dns/check", key, "")
	require.Equal(t, http.StatusConflict, r.Status, r.Body)
	require.Equal(t, "There is nothing to check in this DNS mode.", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Message)

	settingsOf := func(keySecret string) string {
		s := fmt.Sprintf(`{"mode":"rfc2136","addresses":["203.0.113.60","2001:db8::60"],"server":%q,"zone":%q,"key_name":%q,"key_algorithm":%q`,
			srv.Addr, srv.Zone, srv.KeyName, srv.KeyAlgorithm)
		if keySecret != "" {
			s += fmt.Sprintf(`,"key_secret":%q`, keySecret)
		}
		return s + "}"
	}
	for _, tt := range []struct {
		name, body string
		fields     []string
	}{
		{"no secret yet", settingsOf(""), []string{"key_secret"}},
		{"bad fields", `{"mode":"rfc2136","addresses":["not-an-ip"],"server":"ns1","zone":"clusters.test","key_name":"bad name!","key_secret":"c2VjcmV0"}`,
			[]string{"addresses", "server", "key_name"}},
		{"unknown mode", `{"mode":"carrier-pigeon"}`, []string{"mode"}},
	} {
		r := b.APICall(t, http.MethodPut, "/api/v1/admin/edge/dns", key, tt.body)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, tt.name+": "+r.Body)
		fields := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields
		for _, f := range tt.fields {
			require.Contains(t, fields, f, tt.name)
		}
	}
	r = b.APICall(t, http.MethodPut, "/api/v1/admin/edge/dns", key, `{"mode":"none","key_secret_set":true}`)
	require.Equal(t, http.StatusBadRequest, r.Status, "what the API shows is not what it takes")
	require.NotContains(t, b.Audits(t, b.UserID(t, adminEmail)), dnsrecords.Action, "nothing was saved")

	// A new secret, without the password the back office asks for.
	r = b.APICall(t, http.MethodPut, "/api/v1/admin/edge/dns", key, settingsOf(srv.KeySecret))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.NotContains(t, r.Body, srv.KeySecret)
	saved := func(ttl int) string {
		return fmt.Sprintf(`{"mode":"rfc2136","addresses":["203.0.113.60","2001:db8::60"],"resolver":"","server":%q,"zone":%q,
			"key_name":%q,"key_algorithm":%q,"key_secret_set":true,"key_secret_unreadable":false,"ttl":%d,"namespace":"kubebyon-dns"}`,
			srv.Addr, srv.Zone, srv.KeyName, srv.KeyAlgorithm, ttl)
	}
	require.JSONEq(t, saved(60), r.Body)
	r = b.APICall(t, http.MethodGet, "/api/v1/admin/edge/dns", key, "")
	require.JSONEq(t, saved(60), r.Body)
	require.NotContains(t, r.Body, srv.KeySecret)
	require.Equal(t, 1, countOf(b.Audits(t, b.UserID(t, adminEmail)), dnsrecords.Action))
	r = b.APICall(t, http.MethodPost, "/api/v1/admin/edge/dns/check", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, `{"ok":true,"name":"","found":[],"error":""}`, r.Body)

	// Saved again without the secret: it is kept (the check still passes
	// the server's TSIG).
	r = b.APICall(t, http.MethodPut, "/api/v1/admin/edge/dns", key, strings.Replace(settingsOf(""), `"mode"`, `"ttl":300,"mode"`, 1))
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, saved(300), r.Body)
	r = b.APICall(t, http.MethodPost, "/api/v1/admin/edge/dns/check", key, "")
	require.Contains(t, r.Body, `"ok":true`)
	stored, err := dnsrecords.Load(context.Background(), queries.New(b.Pool), b.Box)
	require.NoError(t, err)
	require.Equal(t, srv.KeySecret, stored.KeySecret)
	_, body := admin.Get("/admin/edge")
	require.Contains(t, body, `<option value="rfc2136" selected>`)
	require.Contains(t, body, `data-testid="dns-key-secret-set"`)
	require.Contains(t, body, `value="300"`)

	// An empty body is the defaults.
	r = b.APICall(t, http.MethodPut, "/api/v1/admin/edge/dns", key, `{}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"mode":"none"`)
}

// TestAPIAdminIngress: an admin key reads and replaces the managed ingress
// settings as the back office does: stored as sent (the domain
// lower-cased), audited with the fields that changed, absent fields their
// defaults; bad fields are 422 by their API names and store nothing.
func TestAPIAdminIngress(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	setAPIBaseDomain(t, b, "clusters.test")
	admin, _ := b.SignedUpAdmin(t, "api-ingress-admin")
	key := admin.CreateScopedKey("ops", "admin")
	defaults := `{"controller":"traefik","chart_repo":"","chart_version":"","chart_path":"","apps_base_domain":"",
		"acme_server":"https://acme-v02.api.letsencrypt.org/directory","cert_manager_chart_path":"","gateway_class":""}`

	r := b.APICall(t, http.MethodGet, "/api/v1/admin/edge/ingress", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, defaults, r.Body)

	chartDir := t.TempDir()
	body := fmt.Sprintf(`{"controller":"ingress-nginx","chart_repo":"oci://registry.example.com/charts","chart_version":"4.12.0",
		"chart_path":%q,"apps_base_domain":"Apps.Example.COM","acme_server":%q,"cert_manager_chart_path":%q,"gateway_class":"eg"}`,
		chartDir, ingress.LetsEncryptStaging, chartDir)
	r = b.APICall(t, http.MethodPut, "/api/v1/admin/edge/ingress", key, body)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	want := ingress.Settings{
		Controller: ingress.IngressNGINX, ChartRepo: "oci://registry.example.com/charts", ChartVersion: "4.12.0", ChartPath: chartDir,
		AppsBaseDomain: "apps.example.com", ACMEServer: ingress.LetsEncryptStaging, CertManagerChartPath: chartDir, GatewayClass: "eg",
	}
	require.Equal(t, want, b.IngressSettings(t))
	require.Contains(t, r.Body, `"apps_base_domain":"apps.example.com"`)
	r = b.APICall(t, http.MethodGet, "/api/v1/admin/edge/ingress", key, "")
	require.Contains(t, r.Body, `"gateway_class":"eg"`)
	require.Equal(t, [][]string{{"acmeServer", "appsBaseDomain", "certManagerChartPath", "chartPath", "chartRepo", "chartVersion", "controller", "gatewayClass"}},
		b.IngressAudits(t))
	_, page := admin.Get("/admin/edge")
	require.Contains(t, page, `<option value="ingress-nginx" selected>`)
	require.Contains(t, page, `value="apps.example.com"`)

	// The same again changes nothing, and is not audited.
	r = b.APICall(t, http.MethodPut, "/api/v1/admin/edge/ingress", key, body)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Len(t, b.IngressAudits(t), 1)

	for _, tt := range []struct{ body, field string }{
		{`{"controller":"nginx"}`, "controller"},
		{`{"acme_server":"http://acme.example.com"}`, "acme_server"},
		{`{"chart_path":"/no/such/chart"}`, "chart_path"},
		{`{"apps_base_domain":"apps.clusters.test"}`, "apps_base_domain"},
		{`{"gateway_class":"Not A Class"}`, "gateway_class"},
	} {
		r := b.APICall(t, http.MethodPut, "/api/v1/admin/edge/ingress", key, tt.body)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, tt.body+": "+r.Body)
		require.Contains(t, handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields, tt.field, tt.body)
		require.Equal(t, want, b.IngressSettings(t), "nothing stored")
	}

	r = b.APICall(t, http.MethodPut, "/api/v1/admin/edge/ingress", key, `{}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, defaults, r.Body)
	require.Equal(t, ingress.DefaultSettings(), b.IngressSettings(t))
}
