package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/queries"
)

// The cluster's actions beyond create, change and delete: retry a failed
// cluster or its managed ingress or its routes through the edge, check
// its host names now, and read its events and host names a page at a
// time.

// retryAPICluster is POST /api/v1/clusters/{id}/retry: a failed cluster's
// work starts again; 202 with the cluster, whose Location is polled until
// its status is ready or failed; 409 when it has not failed.
func (h *Handlers) retryAPICluster(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	cl, err := h.Clusters.Retry(c.Request().Context(), who, id, actor(c))
	if errors.Is(err, clusters.ErrNotFailed) {
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	}
	if err != nil {
		return h.apiClusterError(c, err)
	}
	return acceptedCluster(c, apiClusterFrom(cl))
}

// acceptedCluster answers an action the platform carries out after the
// answer: 202 with the cluster, and its Location to poll.
func acceptedCluster(c echo.Context, out apiCluster) error {
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/api/v1/clusters/%d", out.ID))
	return c.JSON(http.StatusAccepted, out)
}

// retryAPIIngress is POST /api/v1/clusters/{id}/ingress/retry: the
// install or removal of the managed ingress that failed starts again; 202
// with the cluster, to poll until managed_ingress.status is no longer
// installing or removing; 409 when it has not failed.
func (h *Handlers) retryAPIIngress(c echo.Context) error {
	cl, err := h.ownChangeableCluster(c)
	if err != nil {
		return err
	}
	_, err = h.Ingress.Retry(c.Request().Context(), cl, actor(c))
	if errors.Is(err, ingress.ErrNotFailed) {
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	}
	if err != nil {
		return err
	}
	out, err := h.withIngress(c, cl)
	if err != nil {
		return err
	}
	return acceptedCluster(c, out)
}

// retryAPIEdge is POST /api/v1/clusters/{id}/ingress/edge/retry: the
// routes through the platform edge that could not be written are tried
// again now; 200 with the cluster, whose managed_ingress.edge says how
// they stand (still error when they could not be written again); 409
// when they had not failed.
func (h *Handlers) retryAPIEdge(c echo.Context) error {
	cl, _, err := h.retryEdgeNow(c)
	if errors.Is(err, ingress.ErrEdgeNotFailed) {
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	}
	if err != nil {
		return err
	}
	out, err := h.withIngress(c, cl)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// checkAPIHostnames is POST /api/v1/clusters/{id}/hostnames/check: the
// cluster's host names are checked now (their DNS, certificates and
// routes), as the console's Check now; 204, and the list reads the
// results.
func (h *Handlers) checkAPIHostnames(c echo.Context) error {
	if _, err := h.checkHostnamesNow(c); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiHostnameList is one page of host names, by name.
type apiHostnameList struct {
	Hostnames []apiHostname `json:"hostnames"`
	Next      string        `json:"next,omitempty"`
}

// listAPIHostnames is GET /api/v1/clusters/{id}/hostnames: the host names
// bound to the cluster, by name, a page at a time (the cursor is the last
// name of the page before).
func (h *Handlers) listAPIHostnames(c echo.Context) error {
	cl, err := h.memberCluster(c)
	if err != nil {
		return err
	}
	p, after, err := namePageOf(c, validHostnameCursor)
	if err != nil {
		return err
	}
	names, err := h.Ingress.HostnamePage(c.Request().Context(), cl.ID, after, int32(p.Limit)+1)
	if err != nil {
		return err
	}
	names, next := pageOf(names, p.Limit, func(n ingress.Hostname) string { return n.Name })
	out := apiHostnameList{Hostnames: make([]apiHostname, len(names)), Next: next}
	for i, n := range names {
		out.Hostnames[i] = apiHostnameOf(n)
	}
	return c.JSON(http.StatusOK, out)
}

// validHostnameCursor: a name a host name list can end a page with, a DNS
// name as every bound one is.
func validHostnameCursor(s string) bool {
	return len(validation.IsDNS1123Subdomain(s)) == 0
}

// apiClusterEvent is one event of a cluster's timeline, as its page shows
// them: reason is stable, for programs (text says it in the key owner's
// language), message adds details; an event that happened again in a row
// counts its repeats, last_seen_at the last.
type apiClusterEvent struct {
	ID         int64      `json:"id"`
	Level      string     `json:"level"`
	Reason     string     `json:"reason"`
	Text       string     `json:"text"`
	Message    string     `json:"message"`
	Count      int32      `json:"count"`
	CreatedAt  time.Time  `json:"created_at"`
	LastSeenAt *time.Time `json:"last_seen_at"`
}

// apiClusterEventList is one page of a cluster's events, newest first.
type apiClusterEventList struct {
	Events []apiClusterEvent `json:"events"`
	Next   string            `json:"next,omitempty"`
}

// listAPIClusterEvents is GET /api/v1/clusters/{id}/events: the cluster's
// timeline, newest first, a page at a time.
func (h *Handlers) listAPIClusterEvents(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	cl, err := h.memberCluster(c)
	if err != nil {
		return err
	}
	p, before, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	events, err := h.Clusters.EventPage(ctx, who, cl.ID, before, int32(p.Limit)+1)
	if err != nil {
		return err
	}
	events, next := pageOf(events, p.Limit, func(e queries.ClusterEvent) string { return idCursor(e.ID) })
	out := apiClusterEventList{Events: make([]apiClusterEvent, len(events)), Next: next}
	for i, e := range events {
		out.Events[i] = apiClusterEvent{
			ID: e.ID, Level: e.Level, Reason: e.Reason, Text: locale.T(ctx, "ClusterEvent"+e.Reason), Message: e.Message,
			Count: e.Count, CreatedAt: e.CreatedAt.Time.UTC(), LastSeenAt: optionalTime(e.LastSeenAt),
		}
	}
	return c.JSON(http.StatusOK, out)
}
