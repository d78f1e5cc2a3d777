package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/edge"
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
	have := c.QueryParam("version")
	wait := time.Duration(0)
	if s := c.QueryParam("wait"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || time.Duration(n)*time.Second > h.edgeWaitLimit() {
			c.Response().Header().Set("X-Max-Wait", strconv.Itoa(int(h.edgeWaitLimit().Seconds())))
			return echo.NewHTTPError(http.StatusBadRequest, "ErrEdgeWaitInvalid")
		}
		wait = time.Duration(n) * time.Second
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	st, changed, err := h.EdgeState.Next(c.Request().Context(), have, wait)
	if err != nil {
		return err
	}
	if !changed {
		return c.NoContent(http.StatusNotModified)
	}
	c.Response().Header().Set("ETag", strconv.Quote(st.Version))
	return c.JSON(http.StatusOK, st)
}

// recordEdgeStatus is POST /api/v1/edge/status: an edge's report on
// itself. It answers 204.
func (h *Handlers) recordEdgeStatus(c echo.Context) error {
	t := c.Get(ctxEdgeToken).(queries.EdgeToken)
	var r edge.Report
	if err := decodeJSON(c, &r); err != nil {
		return err
	}
	if _, err := h.Edge.Record(c.Request().Context(), t, c.RealIP(), r); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
