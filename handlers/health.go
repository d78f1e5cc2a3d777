package handlers

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/migrations"
)

type probeResult struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// readyTimeout bounds the readiness check: a hung database must make the
// probe fail fast, not after the request timeout.
const readyTimeout = 2 * time.Second

// The reasons a probe gives to anyone who asks; the details go to the log.
const (
	reasonDatabaseDown        = "database down"
	reasonDatabaseUnreachable = "database unreachable"
	reasonSchemaOutOfDate     = "schema out of date"
)

// showHealth is the liveness probe: the process answers, and the embedded
// PostgreSQL it runs, if any, is up.
func (h *Handlers) showHealth(c echo.Context) error {
	if h.Alive != nil {
		if err := h.Alive(); err != nil {
			h.Logger.ErrorContext(c.Request().Context(), "liveness check failed", "error", err)
			return c.JSON(http.StatusServiceUnavailable, probeResult{Status: "unavailable", Error: reasonDatabaseDown})
		}
	}
	return c.JSON(http.StatusOK, probeResult{Status: "ok"})
}

// showReadiness is the readiness probe: the database answers and its schema
// is the one this build expects.
func (h *Handlers) showReadiness(c echo.Context) error {
	if reason, err := h.ready(c.Request().Context()); err != nil {
		h.Logger.WarnContext(c.Request().Context(), "readiness check failed", "error", err)
		return c.JSON(http.StatusServiceUnavailable, probeResult{Status: "unavailable", Error: reason})
	}
	return c.JSON(http.StatusOK, probeResult{Status: "ok"})
}

// ready checks the database within readyTimeout. On failure it returns a
// short reason for anyone to see and the error for the log.
func (h *Handlers) ready(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := h.Pool.Ping(ctx); err != nil {
		return reasonDatabaseUnreachable, err
	}
	if err := migrations.Check(ctx, h.Pool); err != nil {
		if errors.Is(err, migrations.ErrNotCurrent) {
			return reasonSchemaOutOfDate, err
		}
		return reasonDatabaseUnreachable, err
	}
	return "", nil
}
