package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/views"
)

// showClusterEndpoint is GET /clusters/:id/endpoint, the cluster page's
// endpoint panel, which htmx loads after the page and refreshes: the API
// host name, its DNS record, and whether the edges reach the cluster.
// Apart from the page, so that the page costs no more to serve.
func (h *Handlers) showClusterEndpoint(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	cl, err := h.Clusters.Get(ctx, who, id)
	if errors.Is(err, clusters.ErrNotFound) {
		return echo.ErrNotFound
	}
	if err != nil {
		return err
	}
	m := views.ClusterEndpoint{ClusterID: cl.ID, Deleted: cl.Status == clusters.StatusDeleted}
	if !m.Deleted {
		dns, err := h.DNS.Status(ctx, cl.ID, cl.Slug)
		if err != nil {
			return err
		}
		m.Name, m.DNSMode, m.DNSState, m.DNSError, m.DNSAddresses = dns.Name, dns.Mode, dns.State, dns.Error, dns.Addresses
		st, _, err := h.EdgeState.Current(ctx)
		if err != nil {
			return err
		}
		reach, err := h.Edge.Reach(ctx, cl.ID, st.Version)
		if err != nil {
			return err
		}
		for _, r := range reach {
			m.Edges = append(m.Edges, views.EdgeReach{Edge: r.Edge, InStep: r.InStep, Reached: r.Reached(), Up: r.Up, Down: r.Down})
		}
	}
	return render(c, http.StatusOK, views.ClusterEndpointPanel(m))
}
