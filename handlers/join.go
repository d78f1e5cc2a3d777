package handlers

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
)

// joinEventBodyLimit caps a join script's report.
const joinEventBodyLimit = "4K"

// mimeShellScript is what the join endpoint answers with, errors included.
const mimeShellScript = "text/x-shellscript; charset=utf-8"

// isJoin reports whether the request is for the join endpoints.
func isJoin(c echo.Context) bool {
	return strings.HasPrefix(c.Request().URL.Path, "/join/")
}

// joinRefusedHeader names, for tooling, why GET /join/<token> refused.
const joinRefusedHeader = "X-KubeBYON-Join-Refused"

// serveJoinScript answers with the join script, or with a script that says
// why the token cannot join a node and exits 1. Refusals are HTTP 200 too:
// the documented `curl -fsSL ... | sudo sh` would otherwise print only
// curl's "(22) ... error" and hand sh nothing, which exits 0. The header
// joinRefusedHeader names the reason for tooling.
func (h *Handlers) serveJoinScript(c echo.Context) error {
	ctx := c.Request().Context()
	c.Response().Header().Set(echo.HeaderContentType, mimeShellScript)
	c.Response().Header().Set("Cache-Control", "no-store")
	if limited, err := h.joinLimited(c, ratelimit.JoinScriptPerIP); limited || err != nil {
		if err != nil {
			return err
		}
		return h.refuseJoin(c, jointokens.ErrJoinRateLimited)
	}
	token := c.Param("token")
	svc := h.JoinTokens
	row, err := svc.Check(ctx, token)
	if _, refused := jointokens.RefusalCode(err); refused {
		return h.refuseJoin(c, err)
	}
	if err != nil {
		return err
	}
	ca, err := svc.CACert(ctx, row)
	if errors.Is(err, jointokens.ErrJoinUnavailable) {
		h.Logger.WarnContext(ctx, "join script without the cluster's CA", "cluster_id", row.ClusterID, "error", err)
		return h.refuseJoin(c, jointokens.ErrJoinUnavailable)
	}
	if err != nil {
		return err
	}
	// Rendered whole first: one write with its length, not chunks.
	script, err := svc.JoinScript(ctx, row, ca, token, strings.TrimRight(h.BaseURL, "/")+"/join/"+token+"/events")
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(script)))
	c.Response().WriteHeader(http.StatusOK)
	_, err = c.Response().Write(script)
	return err
}

// refuseJoin answers with the script that prints why and exits 1.
func (h *Handlers) refuseJoin(c echo.Context, reason error) error {
	code, _ := jointokens.RefusalCode(reason)
	c.Response().Header().Set(joinRefusedHeader, code)
	c.Response().WriteHeader(http.StatusOK)
	return jointokens.WriteRefusal(c.Request().Context(), c.Response(), reason)
}

// recordJoinEvent stores one step the join script reports.
func (h *Handlers) recordJoinEvent(c echo.Context) error {
	if limited, err := h.joinLimited(c, ratelimit.JoinEventsPerIP); limited || err != nil {
		if err != nil {
			return err
		}
		return c.NoContent(http.StatusTooManyRequests)
	}
	step := c.FormValue("step")
	clusterID, err := h.JoinTokens.RecordEvent(c.Request().Context(), c.Param("token"), jointokens.Event{
		Step: step, Status: c.FormValue("status"), Message: c.FormValue("message"), Host: c.FormValue("host"), ClientIP: c.RealIP(),
	})
	if errors.Is(err, jointokens.ErrEventInvalid) {
		return c.NoContent(http.StatusBadRequest)
	}
	if status := joinRefusalStatus(err); status != 0 {
		return c.NoContent(status)
	}
	if err != nil {
		return err
	}
	if step == jointokens.StepJoin {
		// The machine has filed its CSR: learn of it now, not at the next
		// periodic sync, and never behind the periodic ones.
		args, opts := jointokens.RequestSync(clusterID, time.Now())
		if _, err := h.River.Insert(c.Request().Context(), args, opts); err != nil {
			return fmt.Errorf("enqueue join token sync of cluster %d: %w", clusterID, err)
		}
	}
	return c.NoContent(http.StatusNoContent)
}

// joinRefusalStatus is the HTTP status with which the events endpoint
// answers a refused token; 0 for other errors.
func joinRefusalStatus(err error) int {
	switch {
	case errors.Is(err, jointokens.ErrJoinUnknown):
		return http.StatusNotFound
	case errors.Is(err, jointokens.ErrJoinRevoked), errors.Is(err, jointokens.ErrJoinExpired), errors.Is(err, jointokens.ErrJoinUsedUp):
		return http.StatusGone
	case errors.Is(err, jointokens.ErrJoinNotReady), errors.Is(err, jointokens.ErrJoinSuspended):
		return http.StatusConflict
	}
	return 0
}

// joinSubjectsKept bounds the client addresses whose join hits the
// process counts before PostgreSQL (ratelimit.Limiter): a few MB at most.
const joinSubjectsKept = 10_000

// joinLimited counts a hit of the client's address and reports whether it
// is over the limit (setting Retry-After). The process's own limiter
// counts it first: PostgreSQL sees the hits of an address in batches, and
// each of them near the limit.
func (h *Handlers) joinLimited(c echo.Context, rule ratelimit.Rule) (bool, error) {
	d, err := h.joinLimiter.Hit(c.Request().Context(), rule, c.RealIP(), time.Now())
	if err != nil {
		return false, err
	}
	if !d.Allowed {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.RetryAfter.Seconds()))))
	}
	return !d.Allowed, nil
}
