package handlers

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// sessionEdgeTokenForm holds the id of the token form last shown: a form
// posts once, so that a reload does not make a second token.
const sessionEdgeTokenForm = "edge_token_form"

// showAdminEdgePage is GET /admin/edge; htmx asks it for the edges alone
// every five seconds.
func (h *Handlers) showAdminEdgePage(c echo.Context) error {
	h.viewAsAPICall(c, "adminGetEdge", nil)
	return h.renderAdminEdge(c, http.StatusOK, adminEdgeForms{})
}

// adminEdgeForms are the edge page's forms as a request left them: the
// new token's (empty when nil), the DNS settings' and the managed ingress
// settings' (the stored settings when nil), and the DNS check's result.
type adminEdgeForms struct {
	token   *views.Form
	dns     *views.Form
	ingress *views.Form
	check   *views.DNSCheck
}

func (h *Handlers) renderAdminEdge(c echo.Context, status int, forms adminEdgeForms) error {
	ctx := c.Request().Context()
	f := views.NewForm()
	if forms.token != nil {
		f = *forms.token
	}
	m, err := h.adminEdgeStatus(ctx)
	if err != nil {
		return err
	}
	m.BaseURL, m.Form = h.BaseURL, f
	if wantsFragment(c) {
		return render(c, status, views.AdminEdgeInstances(m))
	}
	tokens, err := h.Edge.Tokens(ctx)
	if err != nil {
		return err
	}
	for _, t := range tokens {
		m.Tokens = append(m.Tokens, edgeTokenView(t))
	}
	if forms.dns != nil {
		m.DNS = *forms.dns
	} else {
		set, err := h.DNS.Settings(ctx)
		if err != nil && !errors.Is(err, dnsrecords.ErrUnreadable) {
			return err
		}
		m.DNS = dnsForm(set)
		if errors.Is(err, dnsrecords.ErrUnreadable) {
			m.DNS.Errors["keySecret"] = "ErrDNSKeySecretUnreadable"
		}
	}
	m.DNSCheck = forms.check
	stored, err := h.Ingress.Settings(ctx)
	if err != nil {
		return err
	}
	m.Ingress = views.AdminIngress{Form: ingressForm(stored), Stored: stored.Controller}
	if forms.ingress != nil {
		m.Ingress.Form = *forms.ingress
	}
	f.Values["form_id"] = rand.Text()
	h.sessions.Put(ctx, sessionEdgeTokenForm, f.Values["form_id"])
	u, _ := currentUser(c)
	if m.Confirm, err = h.adminConfirm(c, u, "/admin/edge"); err != nil {
		return err
	}
	return render(c, status, views.AdminEdgePage(m))
}

// adminEdgeStatus is how the edges and the route agents stand: the
// desired state, the edges as they last reported and the route agents,
// for the edge page and the admin API.
func (h *Handlers) adminEdgeStatus(ctx context.Context) (views.AdminEdge, error) {
	st, _, err := h.EdgeState.Current(ctx)
	if err != nil {
		return views.AdminEdge{}, err
	}
	insts, err := h.Edge.Instances(ctx)
	if err != nil {
		return views.AdminEdge{}, err
	}
	m := views.AdminEdge{Version: st.Version, Routes: len(st.Routes)}
	now := time.Now()
	for _, in := range insts {
		m.Instances = append(m.Instances, views.EdgeInstance{
			Name: in.Name, Token: in.TokenName, Address: in.Address, HAProxyVersion: in.HaproxyVersion,
			Applied: in.AppliedVersion, InStep: in.AppliedVersion == st.Version,
			LastSeen: in.LastSeenAt.Time, Stale: now.Sub(in.LastSeenAt.Time) > views.EdgeStaleAfter,
			Up: int(in.BackendsUp), Down: int(in.BackendsDown), LastError: in.LastError,
		})
	}
	return m, h.adminRouteAgents(ctx, &m)
}

func edgeTokenView(t queries.EdgeToken) views.EdgeToken {
	return views.EdgeToken{
		ID: t.ID, Name: t.Name, Prefix: t.Prefix, Created: t.CreatedAt.Time,
		LastUsed: timeOf(t.LastUsedAt), Revoked: t.RevokedAt.Valid,
	}
}

// createEdgeToken shows the new token's value in the response itself,
// never redirecting: it is not stored anywhere it could be shown from.
func (h *Handlers) createEdgeToken(c echo.Context) error {
	formID := h.sessions.PopString(c.Request().Context(), sessionEdgeTokenForm)
	if formID == "" || c.FormValue("form_id") != formID {
		h.flashError(c, "FlashAPIKeyFormUsed")
		return redirect(c, "/admin/edge")
	}
	f := formFrom(c, "name")
	created, err := h.Edge.CreateToken(c.Request().Context(), f.Value("name"), actor(c))
	var fe input.Errors
	if errors.As(err, &fe) {
		for k, v := range fe {
			f.Errors[k] = v
		}
		return h.renderAdminEdge(c, http.StatusUnprocessableEntity, adminEdgeForms{token: &f})
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return render(c, http.StatusOK, views.AdminEdgeTokenCreatedPage(created.Value, edgeTokenView(created.Token), h.BaseURL))
}

// errEdgeTokenNotFound answers an edge token that does not exist.
var errEdgeTokenNotFound = echo.NewHTTPError(http.StatusNotFound, "ErrorEdgeTokenNotFound")

// edgeToken is the token of the path's :id; an unknown one is not found.
func (h *Handlers) edgeToken(c echo.Context) (queries.EdgeToken, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return queries.EdgeToken{}, errEdgeTokenNotFound
	}
	t, err := h.Edge.Token(c.Request().Context(), id)
	if errors.Is(err, edge.ErrNotFound) {
		return t, errEdgeTokenNotFound
	}
	return t, err
}

func (h *Handlers) showRevokeEdgeTokenPage(c echo.Context) error {
	t, err := h.edgeToken(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AdminEdgeTokenRevokePage(edgeTokenView(t)))
}

func (h *Handlers) revokeEdgeToken(c echo.Context) error {
	t, err := h.edgeToken(c)
	if err != nil {
		return err
	}
	if err := h.Edge.RevokeToken(c.Request().Context(), t.ID, actor(c)); err != nil {
		return err
	}
	h.flash(c, "FlashEdgeTokenRevoked")
	return redirect(c, "/admin/edge")
}

// adminRouteAgents fills in the route agents' desired routes and the
// agents that reported in the last day.
func (h *Handlers) adminRouteAgents(ctx context.Context, m *views.AdminEdge) error {
	routes, _, err := h.EdgeRoutes.Current(ctx)
	if err != nil {
		return err
	}
	m.RoutesVersion, m.TenantRoutes = routes.Version, len(routes.Routes)
	agents, err := h.Edge.RouteAgents(ctx, 24*time.Hour)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, a := range agents {
		m.RouteAgents = append(m.RouteAgents, views.RouteAgentRow{
			Node: a.Node, Token: a.TokenName, Address: a.Address, InStep: a.AppliedVersion == routes.Version,
			InPlace: int(a.InPlace), Added: int(a.Added), Replaced: int(a.Replaced), Removed: int(a.Removed),
			Failed: len(a.FailedRoutes), LastError: a.LastError, LastSeen: a.LastSeenAt.Time,
			Stale: now.Sub(a.LastSeenAt.Time) > edge.RouteAgentsFresh,
		})
	}
	return nil
}
