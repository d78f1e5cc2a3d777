package handlers

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/views"
)

func (h *Handlers) showDeleteClusterPage(c echo.Context) error {
	cl, err := h.ownCluster(c)
	if err != nil {
		return err
	}
	if cl.DeleteRequestedAt.Valid {
		h.flashError(c, clusters.ErrDeleting.Error())
		return redirect(c, fmt.Sprintf("/clusters/%d", cl.ID))
	}
	return render(c, http.StatusOK, views.ClusterDeletePage(clusterView(cl), views.NewForm()))
}

func (h *Handlers) deleteCluster(c echo.Context) error {
	cl, err := h.ownCluster(c)
	if err != nil {
		return err
	}
	u, _ := currentUser(c)
	f := formFrom(c, "confirm")
	_, err = h.Clusters.Delete(c.Request().Context(), u.ID, cl.ID, f.Value("confirm"), actor(c))
	var fe clusters.FieldErrors
	switch {
	case errors.Is(err, clusters.ErrNotFound):
		return echo.ErrNotFound
	case errors.As(err, &fe):
		for k, v := range fe {
			f.Errors[k] = v
		}
		return render(c, http.StatusUnprocessableEntity, views.ClusterDeletePage(clusterView(cl), f))
	case err != nil:
		return err
	}
	h.flash(c, "FlashClusterDeleteRequested")
	return redirect(c, fmt.Sprintf("/clusters/%d", cl.ID))
}
