package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/entitlements"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// showClusterIngress is GET /clusters/:id/ingress, the cluster page's
// managed ingress panel, which htmx loads after the page (so that the page
// costs no more to serve) and while a job works on it.
// showClusterIngress is the cluster's Ingress tab, or for htmx its panel
// alone (which asks for itself while a job works on it).
func (h *Handlers) showClusterIngress(c echo.Context) error {
	cl, err := h.memberCluster(c)
	if err != nil {
		return err
	}
	m, err := h.clusterIngressView(c, cl)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return renderPageOrFragment(c, views.ClusterIngressPage(clusterView(cl), m), views.ClusterIngressPanel(m))
}

func (h *Handlers) clusterIngressView(c echo.Context, cl queries.Cluster) (views.ClusterIngress, error) {
	st, err := h.Ingress.Get(c.Request().Context(), cl)
	if err != nil {
		return views.ClusterIngress{}, err
	}
	names, err := h.Ingress.Hostnames(c.Request().Context(), cl.ID)
	if err != nil {
		return views.ClusterIngress{}, err
	}
	hostnames := make([]views.ClusterHostname, len(names))
	for i, n := range names {
		hostnames[i] = views.ClusterHostname{
			Name: n.Name, Managed: n.Managed, State: n.State, Resolved: n.Resolved, Error: n.Error,
			Cert: n.Cert, CertError: n.CertError, CertExpires: n.CertNotAfter, EdgeStatus: n.EdgeStatus,
		}
	}
	m := views.ClusterIngress{
		Hostnames: hostnames, Hostname: views.NewForm(),
		ClusterID: cl.ID, CanSwitch: !cl.DeleteRequestedAt.Valid && !clusters.Suspended(cl),
		Enabled: st.Enabled, Status: st.Status, Message: st.Message,
		Controller: st.Controller, ChartVersion: st.ChartVersion, Retired: ingress.Retired(st.Controller),
		CNAMETarget: st.CNAMETarget,
		DNSState:    st.DNSState, DNSAddresses: st.DNSAddresses, DNSError: st.DNSError,
		Mode: st.Mode, PodCIDR: st.PodCIDR, EdgeState: st.EdgeState, EdgeMessage: st.EdgeMessage, EdgePods: st.EdgePods,
	}
	if st.EdgeBlocker != nil {
		m.EdgeBlocker = st.EdgeBlocker.Error()
	}
	if st.Mode == ingress.ModeEdge {
		routes, err := h.clusterRoutes(c.Request().Context(), cl.ID)
		if err != nil {
			return views.ClusterIngress{}, err
		}
		m.Routes = &routes
	}
	return m, nil
}

// clusterRoutes is how the route agents stand with the cluster's routes.
func (h *Handlers) clusterRoutes(ctx context.Context, id int64) (views.ClusterRoutes, error) {
	current, _, err := h.EdgeRoutes.Current(ctx)
	if err != nil {
		return views.ClusterRoutes{}, err
	}
	r, err := h.Edge.ClusterRoutesOf(ctx, current, id)
	if err != nil {
		return views.ClusterRoutes{}, err
	}
	out := views.ClusterRoutes{Routes: r.Routes, InPlace: r.InPlace()}
	for _, a := range r.Agents {
		out.Agents = append(out.Agents, views.RouteAgent{Node: a.Node, State: a.State, Error: a.Error, Failed: a.Failed})
	}
	return out, nil
}

// setClusterIngressMode is POST /clusters/:id/ingress/mode: direct, or
// through the platform edge. A mode that cannot be chosen is said on the
// panel, at the form.
func (h *Handlers) setClusterIngressMode(c echo.Context) error {
	cl, err := h.ownChangeableCluster(c)
	if err != nil {
		return err
	}
	_, err = h.Ingress.SetMode(c.Request().Context(), cl, c.FormValue("mode"), actor(c))
	switch {
	case errors.Is(err, ingress.ErrMode), errors.Is(err, ingress.ErrEdgeNotConfigured), errors.Is(err, ingress.ErrPodCIDRShared):
		m, verr := h.clusterIngressView(c, cl)
		if verr != nil {
			return verr
		}
		m.ModeError = err.Error()
		if wantsFragment(c) {
			return render(c, http.StatusUnprocessableEntity, views.ClusterIngressPanel(m))
		}
		h.flashError(c, err.Error())
	case errors.Is(err, clusters.ErrDeleting):
		h.flashError(c, err.Error())
	case err != nil:
		return err
	default:
		h.flash(c, "ClusterIngressModeSaved")
	}
	return redirect(c, fmt.Sprintf("/clusters/%d/ingress", cl.ID))
}

// showDisableIngressPage confirms switching managed ingress off.
func (h *Handlers) showDisableIngressPage(c echo.Context) error {
	cl, err := h.memberCluster(c)
	if err != nil {
		return err
	}
	m, err := h.clusterIngressView(c, cl)
	if err != nil {
		return err
	}
	if !m.Enabled {
		return redirect(c, fmt.Sprintf("/clusters/%d/ingress", cl.ID))
	}
	return render(c, http.StatusOK, views.ClusterIngressDisablePage(clusterView(cl), m))
}

// setClusterIngress is POST /clusters/:id/ingress: enabled=on switches
// managed ingress on, off (from the confirmation page) off.
func (h *Handlers) setClusterIngress(c echo.Context) error {
	cl, err := h.ownChangeableCluster(c)
	if err != nil {
		return err
	}
	on := c.FormValue("enabled") == "on"
	_, err = h.Ingress.Switch(c.Request().Context(), cl, on, actor(c))
	var limit *entitlements.LimitError
	switch {
	case errors.Is(err, clusters.ErrDeleting), errors.Is(err, ingress.ErrNoAppsDomain):
		h.flashError(c, err.Error())
	case errors.As(err, &limit):
		h.flashError(c, locale.T(c.Request().Context(), limit.Error(), limit.Data()))
	case err != nil:
		return err
	case on:
		h.flash(c, "FlashIngressEnabled")
	default:
		h.flash(c, "FlashIngressDisabled")
	}
	return redirect(c, fmt.Sprintf("/clusters/%d/ingress", cl.ID))
}

// retryClusterIngress starts a failed install or removal again.
func (h *Handlers) retryClusterIngress(c echo.Context) error {
	cl, err := h.ownChangeableCluster(c)
	if err != nil {
		return err
	}
	_, err = h.Ingress.Retry(c.Request().Context(), cl, actor(c))
	switch {
	case errors.Is(err, ingress.ErrNotFailed):
		h.flashError(c, err.Error())
	case err != nil:
		return err
	default:
		h.flash(c, "FlashIngressRetried")
	}
	return redirect(c, fmt.Sprintf("/clusters/%d/ingress", cl.ID))
}

// retryClusterEdge is POST /clusters/:id/ingress/edge/retry: the routes
// through the platform edge that could not be written are tried again
// now.
func (h *Handlers) retryClusterEdge(c echo.Context) error {
	cl, written, err := h.retryEdgeNow(c)
	switch {
	case errors.Is(err, ingress.ErrEdgeNotFailed):
		h.flashError(c, err.Error())
	case err != nil:
		return err
	case written:
		h.flash(c, "FlashIngressEdgeRetried")
	default:
		h.flashError(c, "FlashIngressEdgeRetryFailed")
	}
	return redirect(c, fmt.Sprintf("/clusters/%d/ingress", cl.ID))
}

// retryEdgeNow tries the routes through the platform edge of the user's
// cluster in the path again now, for the console's Retry now and the
// API's, within edgeRetryTimeout; written says whether they are written
// now.
func (h *Handlers) retryEdgeNow(c echo.Context) (cl queries.Cluster, written bool, err error) {
	if cl, err = h.ownChangeableCluster(c); err != nil {
		return cl, false, err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), edgeRetryTimeout)
	defer cancel()
	written, err = h.Ingress.RetryEdge(ctx, cl, actor(c))
	return cl, written, err
}

// edgeRetryTimeout bounds Retry now: a few calls to the host and the
// control plane, each bounded.
const edgeRetryTimeout = 30 * time.Second

// addClusterHostname is POST /clusters/:id/ingress/hostnames: binds a host
// name. A bad or taken name is said in a flash on the cluster page.
func (h *Handlers) addClusterHostname(c echo.Context) error {
	cl, err := h.ownChangeableCluster(c)
	if err != nil {
		return err
	}
	_, err = h.Ingress.AddHostname(c.Request().Context(), cl, c.FormValue("name"), actor(c))
	var (
		fe    input.Errors
		limit *entitlements.LimitError
	)
	switch {
	case errors.As(err, &fe):
		h.flashError(c, fe["name"])
	case errors.As(err, &limit):
		h.flashError(c, locale.T(c.Request().Context(), limit.Error(), limit.Data()))
	case errors.Is(err, ingress.ErrIngressOff), errors.Is(err, ingress.ErrHostnameTooMany), errors.Is(err, clusters.ErrDeleting):
		h.flashError(c, err.Error())
	case err != nil:
		return err
	default:
		h.flash(c, "FlashHostnameAdded")
	}
	return redirect(c, fmt.Sprintf("/clusters/%d/ingress", cl.ID))
}

// removeClusterHostname is POST /clusters/:id/ingress/hostnames/remove.
func (h *Handlers) removeClusterHostname(c echo.Context) error {
	cl, err := h.ownChangeableCluster(c)
	if err != nil {
		return err
	}
	err = h.Ingress.RemoveHostname(c.Request().Context(), cl, c.FormValue("name"), actor(c))
	switch {
	case errors.Is(err, ingress.ErrHostnameNotFound):
		return echo.ErrNotFound
	case err != nil:
		return err
	}
	h.flash(c, "FlashHostnameRemoved")
	return redirect(c, fmt.Sprintf("/clusters/%d/ingress", cl.ID))
}

// checkClusterHostnames is POST /clusters/:id/ingress/hostnames/check:
// Check now.
func (h *Handlers) checkClusterHostnames(c echo.Context) error {
	cl, err := h.checkHostnamesNow(c)
	if err != nil {
		return err
	}
	h.flash(c, "FlashHostnamesChecked")
	return redirect(c, fmt.Sprintf("/clusters/%d/ingress", cl.ID))
}

// checkHostnamesNow checks the host names of the user's cluster in the
// path now, for the console's Check now and the API's, within
// hostnameCheckTimeout.
func (h *Handlers) checkHostnamesNow(c echo.Context) (queries.Cluster, error) {
	cl, err := h.memberCluster(c)
	if err != nil {
		return cl, err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), hostnameCheckTimeout)
	defer cancel()
	return cl, h.Ingress.RunHostnamesCheck(ctx, cl.ID, nil)
}

// hostnameCheckTimeout bounds Check now.
const hostnameCheckTimeout = 15 * time.Second
