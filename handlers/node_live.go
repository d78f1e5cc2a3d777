package handlers

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/views"
)

// showNodeLive answers the node page's poll with the node's current state.
// A node gone from the cluster says so and stops the polling; while the
// state cannot be read the panel says why and asks again, as the cluster
// may come back. Outside htmx it is the node's page.
func (h *Handlers) showNodeLive(c echo.Context) error {
	cl, err := h.memberCluster(c)
	if err != nil {
		return err
	}
	name := c.Param("name")
	c.Response().Header().Set("Cache-Control", "no-store")
	c.Response().Header().Add("Vary", "HX-Request")
	if !wantsFragment(c) {
		return c.Redirect(http.StatusSeeOther, nodePath(cl.ID, name))
	}
	live := views.NodeLive{ClusterID: cl.ID, Node: views.Node{Name: name}}
	d, err := h.Nodes.Show(c.Request().Context(), cl, name)
	switch {
	case errors.Is(err, nodes.ErrNotFound):
		live.Gone = true
	case errors.Is(err, clusters.ErrNotReady):
		live.Error = "ErrNodesClusterNotReady"
	case errors.Is(err, nodes.ErrUnreachable):
		h.Logger.Warn("read node", "cluster_id", cl.ID, "node", name, "err", err)
		live.Error = "NodeLiveUnreachable"
	case err != nil:
		return err
	default:
		live = h.nodeLiveView(cl, d, time.Now())
	}
	return render(c, http.StatusOK, views.NodeLiveUpdate(live))
}
