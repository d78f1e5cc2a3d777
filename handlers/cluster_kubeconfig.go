package handlers

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
)

// downloadKubeconfig hands the owner of a ready cluster its kubeconfig.
func (h *Handlers) downloadKubeconfig(c echo.Context) error {
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	return h.sendKubeconfig(c, id)
}

// sendKubeconfig answers with a cluster's kubeconfig as a file download:
// 404 for another organization's cluster (or for a member who may not
// have it), 409 for one that is not ready.
func (h *Handlers) sendKubeconfig(c echo.Context, id int64) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	cl, kubeconfig, err := h.Clusters.Kubeconfig(c.Request().Context(), who, id, actor(c))
	switch {
	case errors.Is(err, clusters.ErrNotFound):
		return errClusterNotFound
	case errors.Is(err, clusters.ErrNotReady):
		return echo.NewHTTPError(http.StatusConflict, clusters.ErrNotReady.Error())
	case errors.Is(err, clusters.ErrKubeconfigMissing):
		h.Logger.WarnContext(c.Request().Context(), "kubeconfig missing", "cluster", id, "error", err)
		return echo.NewHTTPError(http.StatusConflict, clusters.ErrKubeconfigMissing.Error())
	case err != nil:
		return err
	}
	r := c.Response()
	r.Header().Set(echo.HeaderContentDisposition, fmt.Sprintf("attachment; filename=%q", cl.Name+".kubeconfig"))
	r.Header().Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, "application/yaml", kubeconfig)
}
