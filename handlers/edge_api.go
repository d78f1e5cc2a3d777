package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/queries"
)

const (
	// ctxEdgeToken holds the edge token a request authenticated with.
	ctxEdgeToken = "edge_token"
	// maxEdgeWait bounds a long poll of the edge config; the request
	// timeout bounds it too (edgeWaitLimit).
	maxEdgeWait = 55 * time.Second
)

// requireEdgeToken authenticates the request by its "Authorization:
// Bearer" edge token.
func (h *Handlers) requireEdgeToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token, err := h.bearer(c, edge.ParseBearer, edge.ErrUnauthorized)
		if err != nil {
			return err
		}
		t, err := h.Edge.Authenticate(c.Request().Context(), token)
		if errors.Is(err, edge.ErrUnauthorized) {
			return h.apiUnauthorized(c, invalidTokenChallenge, edge.ErrUnauthorized)
		}
		if err != nil {
			return err
		}
		c.Set(ctxEdgeToken, t)
		return next(c)
	}
}

// edgeWaitLimit is the longest a long poll may wait: maxEdgeWait, and
// well within the request's timeout.
func (h *Handlers) edgeWaitLimit() time.Duration {
	return min(maxEdgeWait, h.RequestTimeout-5*time.Second)
}

// showEdgeConfig is GET /api/v1/edge/config: the routes every edge
// should serve. With ?version= naming the state the edge has, it answers
// as soon as the state is another one, or after ?wait= seconds (at most
// edgeWaitLimit; default 0) with 304 Not Modified.
func (h *Handlers) showEdgeConfig(c echo.Context) error {
	wait, err := h.edgeWait(c)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	st, changed, err := h.EdgeState.Next(c.Request().Context(), c.QueryParam("version"), wait)
	if err != nil {
		return err
	}
	if !changed {
		return c.NoContent(http.StatusNotModified)
	}
	c.Response().Header().Set("ETag", strconv.Quote(st.Version))
	return c.JSON(http.StatusOK, st)
}

// edgeWait is a long poll's ?wait= (seconds; default 0), at most
// edgeWaitLimit.
func (h *Handlers) edgeWait(c echo.Context) (time.Duration, error) {
	s := c.QueryParam("wait")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || time.Duration(n)*time.Second > h.edgeWaitLimit() {
		c.Response().Header().Set("X-Max-Wait", strconv.Itoa(int(h.edgeWaitLimit().Seconds())))
		return 0, echo.NewHTTPError(http.StatusBadRequest, "ErrEdgeWaitInvalid")
	}
	return time.Duration(n) * time.Second, nil
}

// showEdgeRoutes is GET /api/v1/edge/routes: the routes every route
// agent should keep (edgewire.TenantRoutes), long-polled like showEdgeConfig.
func (h *Handlers) showEdgeRoutes(c echo.Context) error {
	wait, err := h.edgeWait(c)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	routes, changed, err := h.EdgeRoutes.Next(c.Request().Context(), c.QueryParam("version"), wait)
	if err != nil {
		return err
	}
	if !changed {
		return c.NoContent(http.StatusNotModified)
	}
	c.Response().Header().Set("ETag", strconv.Quote(routes.Version))
	return c.JSON(http.StatusOK, routes)
}

// recordRouteStatus is POST /api/v1/edge/routes/status: a route agent's
// report on what it applied. It answers 204.
func (h *Handlers) recordRouteStatus(c echo.Context) error {
	t := c.Get(ctxEdgeToken).(queries.EdgeToken)
	var r edgewire.RouteReport
	if err := decodeJSON(c, &r); err != nil {
		return err
	}
	if _, err := h.Edge.RecordRoutes(c.Request().Context(), t, c.RealIP(), r); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// recordEdgeStatus is POST /api/v1/edge/status: an edge's report on
// itself. It answers 204.
func (h *Handlers) recordEdgeStatus(c echo.Context) error {
	t := c.Get(ctxEdgeToken).(queries.EdgeToken)
	var r edgewire.Report
	if err := decodeJSON(c, &r); err != nil {
		return err
	}
	if _, err := h.Edge.Record(c.Request().Context(), t, c.RealIP(), r); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
