package handlers

import (
	"errors"
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
)

// retryCluster starts a failed cluster's work again.
func (h *Handlers) retryCluster(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	_, err = h.Clusters.Retry(c.Request().Context(), who, id, actor(c))
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
