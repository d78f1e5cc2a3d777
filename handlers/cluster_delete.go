package handlers

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

func (h *Handlers) showDeleteClusterPage(c echo.Context) error {
	cl, err := h.memberCluster(c)
	if err != nil {
		return err
	}
	if cl.DeleteRequestedAt.Valid {
		h.flashError(c, clusters.ErrDeleting.Error())
		return redirect(c, fmt.Sprintf("/clusters/%d", cl.ID))
	}
	return h.renderDeletePage(c, http.StatusOK, cl, views.NewForm())
}

// renderDeletePage asks for the cluster's name, and says which machines
// joined it: deleting the cluster leaves them as they are.
func (h *Handlers) renderDeletePage(c echo.Context, status int, cl queries.Cluster, f views.Form) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	nodes, err := h.Clusters.NodeNames(c.Request().Context(), who, cl.ID)
	if err != nil {
		return err
	}
	return render(c, status, views.ClusterDeletePage(views.ClusterDelete{Cluster: clusterView(cl), Nodes: nodes}, f))
}

func (h *Handlers) deleteCluster(c echo.Context) error {
	cl, err := h.memberCluster(c)
	if err != nil {
		return err
	}
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	f := formFrom(c, "confirm")
	_, err = h.Clusters.Delete(c.Request().Context(), who, cl.ID, f.Value("confirm"), actor(c))
	var fe clusters.FieldErrors
	switch {
	case errors.Is(err, clusters.ErrNotFound):
		return echo.ErrNotFound
	case errors.As(err, &fe):
		for k, v := range fe {
			f.Errors[k] = v
		}
		return h.renderDeletePage(c, http.StatusUnprocessableEntity, cl, f)
	case err != nil:
		return err
	}
	h.flash(c, "FlashClusterDeleteRequested")
	return redirect(c, fmt.Sprintf("/clusters/%d", cl.ID))
}
