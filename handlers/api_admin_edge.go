package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/queries"
)

// apiAdminEdge is how the platform's public entry stands: the routes
// every edge should serve and the edges as they last reported; the routes
// every host node should keep and the route agents that reported in the
// last day.
type apiAdminEdge struct {
	Version       string               `json:"version"`
	Routes        int                  `json:"routes"`
	Edges         []apiAdminEdgeStatus `json:"edges"`
	RoutesVersion string               `json:"routes_version"`
	TenantRoutes  int                  `json:"tenant_routes"`
	RouteAgents   []apiAdminRouteAgent `json:"route_agents"`
}

// apiAdminEdgeStatus is an edge as it last reported. InStep: it serves
// the desired version; Stale: it has not reported for a while.
type apiAdminEdgeStatus struct {
	Name           string    `json:"name"`
	Token          string    `json:"token"`
	Address        string    `json:"address"`
	HAProxyVersion string    `json:"haproxy_version"`
	AppliedVersion string    `json:"applied_version"`
	InStep         bool      `json:"in_step"`
	Stale          bool      `json:"stale"`
	LastSeenAt     time.Time `json:"last_seen_at"`
	BackendsUp     int       `json:"backends_up"`
	BackendsDown   int       `json:"backends_down"`
	LastError      string    `json:"last_error"`
}

// apiAdminRouteAgent is a host node's route agent as it last reported;
// Failed counts the routes it could not apply.
type apiAdminRouteAgent struct {
	Node       string    `json:"node"`
	Token      string    `json:"token"`
	Address    string    `json:"address"`
	InStep     bool      `json:"in_step"`
	Stale      bool      `json:"stale"`
	InPlace    int       `json:"in_place"`
	Added      int       `json:"added"`
	Replaced   int       `json:"replaced"`
	Removed    int       `json:"removed"`
	Failed     int       `json:"failed"`
	LastError  string    `json:"last_error"`
	LastSeenAt time.Time `json:"last_seen_at"`
}

// showAPIAdminEdge is GET /api/v1/admin/edge: what the edge page shows of
// the edges and the route agents.
func (h *Handlers) showAPIAdminEdge(c echo.Context) error {
	m, err := h.adminEdgeStatus(c.Request().Context())
	if err != nil {
		return err
	}
	out := apiAdminEdge{
		Version: m.Version, Routes: m.Routes, RoutesVersion: m.RoutesVersion, TenantRoutes: m.TenantRoutes,
		Edges: make([]apiAdminEdgeStatus, len(m.Instances)), RouteAgents: make([]apiAdminRouteAgent, len(m.RouteAgents)),
	}
	for i, in := range m.Instances {
		out.Edges[i] = apiAdminEdgeStatus{
			Name: in.Name, Token: in.Token, Address: in.Address, HAProxyVersion: in.HAProxyVersion, AppliedVersion: in.Applied,
			InStep: in.InStep, Stale: in.Stale, LastSeenAt: in.LastSeen.UTC(), BackendsUp: in.Up, BackendsDown: in.Down, LastError: in.LastError,
		}
	}
	for i, a := range m.RouteAgents {
		out.RouteAgents[i] = apiAdminRouteAgent{
			Node: a.Node, Token: a.Token, Address: a.Address, InStep: a.InStep, Stale: a.Stale, InPlace: a.InPlace, Added: a.Added,
			Replaced: a.Replaced, Removed: a.Removed, Failed: a.Failed, LastError: a.LastError, LastSeenAt: a.LastSeen.UTC(),
		}
	}
	return c.JSON(http.StatusOK, out)
}

// apiEdgeToken is an edge token as the admin API shows it. Token and
// Command are in the answer that created it alone: the token's value is
// stored nowhere it could be shown from again.
type apiEdgeToken struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	Token      string     `json:"token,omitempty"`
	Command    string     `json:"command,omitempty"`
}

func apiEdgeTokenOf(t queries.EdgeToken) apiEdgeToken {
	return apiEdgeToken{
		ID: t.ID, Name: t.Name, Prefix: t.Prefix, CreatedAt: t.CreatedAt.Time.UTC(),
		LastUsedAt: apiTimeOf(t.LastUsedAt), RevokedAt: apiTimeOf(t.RevokedAt),
	}
}

type apiEdgeTokenList struct {
	EdgeTokens []apiEdgeToken `json:"edge_tokens"`
	Next       string         `json:"next,omitempty"`
}

// listAPIEdgeTokens is GET /api/v1/admin/edge/tokens: every edge token,
// revoked ones included, newest first, a page at a time.
func (h *Handlers) listAPIEdgeTokens(c echo.Context) error {
	p, before, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	rows, err := h.Edge.TokensBefore(c.Request().Context(), before, int32(p.Limit)+1)
	if err != nil {
		return err
	}
	rows, next := pageOf(rows, p.Limit, func(t queries.EdgeToken) string { return idCursor(t.ID) })
	out := apiEdgeTokenList{EdgeTokens: make([]apiEdgeToken, len(rows)), Next: next}
	for i, t := range rows {
		out.EdgeTokens[i] = apiEdgeTokenOf(t)
	}
	return c.JSON(http.StatusOK, out)
}

// createAPIEdgeToken is POST /api/v1/admin/edge/tokens: 201 with the new
// token's value and the command that runs an edge with it, this once.
func (h *Handlers) createAPIEdgeToken(c echo.Context) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	created, err := h.Edge.CreateToken(c.Request().Context(), body.Name, actor(c))
	if err != nil {
		return err
	}
	out := apiEdgeTokenOf(created.Token)
	out.Token, out.Command = created.Value, edgeCommand(h.BaseURL, created.Value)
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/api/v1/admin/edge/tokens/%d", created.Token.ID))
	return c.JSON(http.StatusCreated, out)
}

// edgeCommand is what runs an edge with the token value against the
// platform at baseURL, as the edge page shows it.
func edgeCommand(baseURL, value string) string {
	return fmt.Sprintf("KUBEBYON_EDGE_TOKEN=%s kubebyon edge --platform-url %s", value, baseURL)
}

// showAPIEdgeToken is GET /api/v1/admin/edge/tokens/{id}.
func (h *Handlers) showAPIEdgeToken(c echo.Context) error {
	t, err := h.edgeToken(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiEdgeTokenOf(t))
}

// revokeAPIEdgeToken is DELETE /api/v1/admin/edge/tokens/{id}: the
// token's edges and route agents get 401 from then on. Revoking it again
// changes nothing.
func (h *Handlers) revokeAPIEdgeToken(c echo.Context) error {
	t, err := h.edgeToken(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := h.Edge.RevokeToken(ctx, t.ID, actor(c)); err != nil {
		return err
	}
	if t, err = h.Edge.Token(ctx, t.ID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiEdgeTokenOf(t))
}

// apiDNSSettings are the DNS settings as the admin API shows them: never
// the TSIG key's secret, only whether one is stored
// (key_secret_unreadable: one sealed with another KUBEBYON_SECRET_KEY).
type apiDNSSettings struct {
	apiDNSFields
	KeySecretSet        bool `json:"key_secret_set"`
	KeySecretUnreadable bool `json:"key_secret_unreadable"`
}

// apiDNSFields are the DNS settings' fields but the secret.
type apiDNSFields struct {
	Mode         string   `json:"mode"`
	Addresses    []string `json:"addresses"`
	Resolver     string   `json:"resolver"`
	Server       string   `json:"server"`
	Zone         string   `json:"zone"`
	KeyName      string   `json:"key_name"`
	KeyAlgorithm string   `json:"key_algorithm"`
	TTL          int      `json:"ttl"`
	Namespace    string   `json:"namespace"`
}

// apiDNSBody is the body of PUT .../edge/dns: the settings, defaults for
// the fields absent; key_secret absent (or empty) keeps the stored one.
type apiDNSBody struct {
	apiDNSFields
	KeySecret string `json:"key_secret"`
}

// showAPIDNS is GET /api/v1/admin/edge/dns.
func (h *Handlers) showAPIDNS(c echo.Context) error {
	s, err := h.DNS.Settings(c.Request().Context())
	unreadable := errors.Is(err, dnsrecords.ErrUnreadable)
	if err != nil && !unreadable {
		return err
	}
	out := apiDNSSettings{
		apiDNSFields: apiDNSFields{
			Mode: s.Mode, Addresses: append([]string{}, s.Addresses...), Resolver: s.Resolver, Server: s.Server, Zone: s.Zone,
			KeyName: s.KeyName, KeyAlgorithm: s.KeyAlgorithm, TTL: s.TTL, Namespace: s.Namespace,
		},
		KeySecretSet: s.KeySecret != "", KeySecretUnreadable: unreadable,
	}
	return c.JSON(http.StatusOK, out)
}

// saveAPIDNS is PUT /api/v1/admin/edge/dns: the settings saved as the
// back office saves them (dnsrecords.Apply: checked, audited, every
// cluster's record made due), without the password a new TSIG secret
// asks there; answered with the settings as they are now.
func (h *Handlers) saveAPIDNS(c echo.Context) error {
	d := dnsrecords.Defaults()
	body := apiDNSBody{apiDNSFields: apiDNSFields{Mode: d.Mode, KeyAlgorithm: d.KeyAlgorithm, TTL: d.TTL, Namespace: d.Namespace}}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	f := body.apiDNSFields
	_, err := h.DNS.Apply(c.Request().Context(), dnsrecords.Change{
		Settings: dnsrecords.Settings{
			Mode: f.Mode, Addresses: f.Addresses, Resolver: f.Resolver, Server: f.Server, Zone: f.Zone,
			KeyName: f.KeyName, KeyAlgorithm: f.KeyAlgorithm, TTL: f.TTL, Namespace: f.Namespace,
		},
		KeySecret: body.KeySecret,
	}, actor(c))
	if err != nil {
		return apiSettingsError(err)
	}
	return h.showAPIDNS(c)
}

// apiDNSCheck is what a check of the stored DNS settings found: ok, or
// the error in the DNS server's or resolver's words; a wildcard check
// names the name it looked up and what that resolved to.
type apiDNSCheck struct {
	OK    bool     `json:"ok"`
	Name  string   `json:"name"`
	Found []string `json:"found"`
	Error string   `json:"error"`
}

// checkAPIDNS is POST /api/v1/admin/edge/dns/check: the back office's
// check of the stored settings; 409 in a mode with nothing to check.
func (h *Handlers) checkAPIDNS(c echo.Context) error {
	res, err := h.DNS.Check(c.Request().Context(), actor(c))
	var invalid input.Errors
	if errors.As(err, &invalid) {
		return echo.NewHTTPError(http.StatusConflict, invalid["mode"])
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiDNSCheck{OK: res.OK, Name: res.Name, Found: append([]string{}, res.Found...), Error: res.Err})
}

// apiIngressSettings are the managed ingress settings (ingress.Settings,
// which converts to and from them) as the admin API shows and takes them.
type apiIngressSettings struct {
	Controller           string `json:"controller"`
	ChartRepo            string `json:"chart_repo"`
	ChartVersion         string `json:"chart_version"`
	ChartPath            string `json:"chart_path"`
	AppsBaseDomain       string `json:"apps_base_domain"`
	ACMEServer           string `json:"acme_server"`
	CertManagerChartPath string `json:"cert_manager_chart_path"`
	GatewayClass         string `json:"gateway_class"`
}

// showAPIIngressSettings is GET /api/v1/admin/edge/ingress.
func (h *Handlers) showAPIIngressSettings(c echo.Context) error {
	s, err := h.Ingress.Settings(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiIngressSettings(s))
}

// saveAPIIngressSettings is PUT /api/v1/admin/edge/ingress: the settings,
// defaults for the fields absent, saved as the back office saves them
// (ingress.UpdateSettings: checked and compared under the settings lock,
// audited); answered with the settings as they are now.
func (h *Handlers) saveAPIIngressSettings(c echo.Context) error {
	body := apiIngressSettings(ingress.DefaultSettings())
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if _, err := h.Ingress.UpdateSettings(c.Request().Context(), ingress.Settings(body), actor(c)); err != nil {
		return apiSettingsError(err)
	}
	return h.showAPIIngressSettings(c)
}

// apiSettingsError answers a settings save that failed with err, as
// adminSaveError does the back office's: 404 for an admin who is no
// longer one, 422 naming the fields by their names in the API (the
// services name them as their forms do: keyName is key_name).
func apiSettingsError(err error) error {
	var invalid input.Errors
	switch {
	case errors.Is(err, adminauth.ErrNotAdmin):
		return echo.ErrNotFound
	case errors.As(err, &invalid):
		out := input.Errors{}
		for k, v := range invalid {
			out[snakeCase(k)] = v
		}
		return out
	}
	return err
}

// snakeCase is a form field's name as the API writes it: appsBaseDomain
// is apps_base_domain.
func snakeCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
