package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/orgs"
)

// kubeconfigTimeout bounds the reads a kubeconfig needs from the host
// cluster (its Secret) and, for a member, the virtual control plane (a
// token): one that does not answer ends the download, not the browser's
// patience.
const kubeconfigTimeout = 5 * time.Second

// downloadKubeconfig hands the owner of a ready cluster its kubeconfig.
// When it cannot (the cluster is not ready, its control plane does not
// answer) the browser goes back to the cluster's page with the reason:
// an error page answered here would be saved as the kubeconfig file.
func (h *Handlers) downloadKubeconfig(c echo.Context) error {
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	err = h.sendKubeconfig(c, id)
	if err == nil || errors.Is(err, errClusterNotFound) || errors.Is(err, orgs.ErrForbidden) {
		return err
	}
	h.Logger.WarnContext(c.Request().Context(), "kubeconfig unavailable", "cluster", id, "error", err)
	h.flashError(c, "KubeconfigUnavailable")
	return redirect(c, fmt.Sprintf("/clusters/%d", id))
}

// sendKubeconfig answers with a cluster's kubeconfig as a file download:
// 404 for another organization's cluster (or for a member who may not
// have it), 409 for one that is not ready.
func (h *Handlers) sendKubeconfig(c echo.Context, id int64) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), kubeconfigTimeout)
	defer cancel()
	cl, kubeconfig, err := h.Clusters.Kubeconfig(ctx, who, id, actor(c))
	switch {
	case errors.Is(err, clusters.ErrNotFound):
		return errClusterNotFound
	case errors.Is(err, clusters.ErrNotReady):
		return echo.NewHTTPError(http.StatusConflict, clusters.ErrNotReady.Error())
	case errors.Is(err, clusters.ErrKubeconfigMissing):
		h.Logger.WarnContext(ctx, "kubeconfig missing", "cluster", id, "error", err)
		return echo.NewHTTPError(http.StatusConflict, clusters.ErrKubeconfigMissing.Error())
	case err != nil:
		return err
	}
	r := c.Response()
	r.Header().Set(echo.HeaderContentDisposition, fmt.Sprintf("attachment; filename=%q", cl.Name+".kubeconfig"))
	r.Header().Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, "application/yaml", kubeconfig)
}
