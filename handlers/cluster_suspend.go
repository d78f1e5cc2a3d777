package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/queries"
)

// errClusterSuspended answers an owner's change to a cluster an admin
// suspended (admin_clusters.go); deleting it is still allowed.
var errClusterSuspended = echo.NewHTTPError(http.StatusConflict, clusters.ErrSuspended.Error())

// ownChangeableCluster is memberCluster for the routes that change the
// cluster (its managed ingress, host names, node clean-up): a suspended
// one is refused with errClusterSuspended.
func (h *Handlers) ownChangeableCluster(c echo.Context) (queries.Cluster, error) {
	cl, err := h.memberCluster(c)
	if err == nil && clusters.Suspended(cl) {
		return cl, errClusterSuspended
	}
	return cl, err
}
