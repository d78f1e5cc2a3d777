package handlers

import (
	"errors"
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
)

// retryCluster starts a failed cluster's work again.
func (h *Handlers) retryCluster(c echo.Context) error {
	u, _ := currentUser(c)
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	_, err = h.Clusters.Retry(c.Request().Context(), u.ID, id, actor(c))
	switch {
	case errors.Is(err, clusters.ErrNotFound):
		return echo.ErrNotFound
	case errors.Is(err, clusters.ErrNotFailed):
		h.flashError(c, err.Error())
	case err != nil:
		return err
	default:
		h.flash(c, "FlashClusterRetried")
	}
	return redirect(c, fmt.Sprintf("/clusters/%d", id))
}
