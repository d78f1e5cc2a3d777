package handlers

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/queries"
)

// setStaleNodeCleanup turns the cluster's stale-node clean-up on (after
// hours of NotReady) or off (empty hours).
func (h *Handlers) setStaleNodeCleanup(c echo.Context) error {
	cl, err := h.ownCluster(c)
	if err != nil {
		return err
	}
	var hours pgtype.Int4
	if raw := strings.TrimSpace(c.FormValue("hours")); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > 8760 {
			h.flashError(c, "ErrStaleCleanupHours")
			return redirect(c, fmt.Sprintf("/clusters/%d/nodes", cl.ID))
		}
		hours = pgtype.Int4{Int32: int32(n), Valid: true}
	}
	ctx := c.Request().Context()
	err = pgx.BeginFunc(ctx, h.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := q.ClusterSetStaleNodeCleanup(ctx, queries.ClusterSetStaleNodeCleanupParams{ID: cl.ID, Hours: hours}); err != nil {
			return fmt.Errorf("set stale node clean-up: %w", err)
		}
		details := map[string]any{"enabled": hours.Valid}
		if hours.Valid {
			details["hours"] = hours.Int32
		}
		return audit.Record(ctx, q, actor(c), audit.Event{Action: "cluster.stale_node_cleanup", TargetType: "cluster", TargetID: fmt.Sprint(cl.ID), Details: details})
	})
	if err != nil {
		return err
	}
	h.flash(c, "FlashStaleCleanupSaved")
	return redirect(c, fmt.Sprintf("/clusters/%d/nodes", cl.ID))
}
