package handlers

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/views"
)

// firstNode is the "Add your first node" card of the member's ready
// cluster id without nodes: the command of its newest active token, if it
// has one (List gives them newest first).
func (h *Handlers) firstNode(c echo.Context, id int64) (*views.FirstNode, error) {
	who, err := h.acting(c)
	if err != nil {
		return nil, err
	}
	_, tokens, err := h.JoinTokens.List(c.Request().Context(), who, id)
	if err != nil {
		return nil, fmt.Errorf("join tokens of cluster %d: %w", id, err)
	}
	f := &views.FirstNode{ClusterID: id}
	for _, t := range tokens {
		if t.Status == jointokens.StatusActive && t.Value != "" {
			v := h.joinTokenView(t)
			f.Token = &v
			// The page shows a credential.
			c.Response().Header().Set("Cache-Control", "no-store")
			break
		}
	}
	return f, nil
}

// createFirstNodeToken is the first-node card's button: a join token with
// the form's defaults (one use, one hour), answered with its command in
// place for htmx, or back on the cluster's page.
func (h *Handlers) createFirstNodeToken(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	created, err := h.JoinTokens.Create(c.Request().Context(), who, id, jointokens.Input{}, actor(c))
	switch {
	case errors.Is(err, jointokens.ErrNotFound):
		return echo.ErrNotFound
	case errors.Is(err, jointokens.ErrClusterNotReady), errors.Is(err, clusters.ErrSuspended):
		h.flashError(c, err.Error())
		return redirect(c, fmt.Sprintf("/clusters/%d", id))
	case err != nil:
		return err
	}
	if !wantsFragment(c) {
		h.flash(c, "FlashJoinTokenCreated")
		return redirect(c, fmt.Sprintf("/clusters/%d", id))
	}
	t := h.joinTokenView(jointokens.Listed{Token: created.Token, Status: jointokens.StatusActive, Value: created.Value})
	c.Response().Header().Set("Cache-Control", "no-store")
	return render(c, http.StatusCreated, views.FirstNodeCommand(id, t))
}
