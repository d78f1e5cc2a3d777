package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/migrations"
)

type probeResult struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// showHealth is the liveness probe: the process answers.
func (h *Handlers) showHealth(c echo.Context) error {
	return c.JSON(http.StatusOK, probeResult{Status: "ok"})
}

// showReadiness is the readiness probe: the database answers and its schema
// is the one this build expects. The error text is for operators.
func (h *Handlers) showReadiness(c echo.Context) error {
	if err := h.ready(c); err != nil {
		return c.JSON(http.StatusServiceUnavailable, probeResult{Status: "unavailable", Error: err.Error()})
	}
	return c.JSON(http.StatusOK, probeResult{Status: "ok"})
}

func (h *Handlers) ready(c echo.Context) error {
	ctx := c.Request().Context()
	if err := h.Pool.Ping(ctx); err != nil {
		return err
	}
	return migrations.Check(ctx, h.Pool)
}
