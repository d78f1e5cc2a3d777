package handlers

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/nodes"
)

// setStaleNodeCleanup turns the cluster's stale-node clean-up on (after
// hours of NotReady) or off (empty hours).
func (h *Handlers) setStaleNodeCleanup(c echo.Context) error {
	cl, err := h.ownChangeableCluster(c)
	if err != nil {
		return err
	}
	back := fmt.Sprintf("/clusters/%d/edit", cl.ID)
	hours := 0
	if raw := strings.TrimSpace(c.FormValue("hours")); raw != "" {
		// Zero is no period: an empty field turns the clean-up off.
		if hours, err = strconv.Atoi(raw); err != nil || hours == 0 {
			hours = -1
		}
	}
	err = h.Nodes.SetStaleCleanup(c.Request().Context(), cl, hours, actor(c))
	if errors.Is(err, nodes.ErrStaleCleanupHours) {
		h.flashError(c, err.Error())
		return redirect(c, back)
	}
	if err != nil {
		return err
	}
	h.flash(c, "FlashStaleCleanupSaved")
	return redirect(c, back)
}
