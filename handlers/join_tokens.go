package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/views"
)

func (h *Handlers) showJoinTokensPage(c echo.Context) error {
	return h.renderJoinTokens(c, http.StatusOK, views.NewForm())
}

// renderJoinTokens renders the tokens page with the given form.
func (h *Handlers) renderJoinTokens(c echo.Context, status int, f views.Form) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	svc := h.JoinTokens
	cl, tokens, err := svc.List(c.Request().Context(), who, id)
	if errors.Is(err, jointokens.ErrNotFound) {
		return h.clusterNotFound(c, who, id)
	}
	if err != nil {
		return err
	}
	d := views.JoinTokens{Cluster: clusterView(cl), Ready: cl.Status == clusters.StatusReady, Suspended: clusters.Suspended(cl), Form: f, LoopbackBaseURL: h.loopbackBaseURL()}
	// The page shows each usable token's join command, a credential.
	c.Response().Header().Set("Cache-Control", "no-store")
	for _, t := range tokens {
		d.Tokens = append(d.Tokens, h.joinTokenView(t))
	}
	h.viewAsAPICall(c, "listJoinTokens", nil, strconv.FormatInt(cl.ID, 10))
	return render(c, status, views.JoinTokensPage(d))
}

func (h *Handlers) createJoinToken(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	f := formFrom(c, "description", "lifetime", "uses", "max_uses")
	_, err = h.JoinTokens.Create(c.Request().Context(), who, id, jointokens.Input{
		Description: f.Value("description"), Lifetime: f.Value("lifetime"), Uses: f.Value("uses"), MaxUses: f.Value("max_uses"),
	}, actor(c))
	var fe jointokens.FieldErrors
	switch {
	case errors.Is(err, jointokens.ErrNotFound):
		return echo.ErrNotFound
	case errors.As(err, &fe):
		for k, v := range fe {
			f.Errors[k] = v
		}
		return h.renderJoinTokens(c, http.StatusUnprocessableEntity, f)
	case errors.Is(err, jointokens.ErrClusterNotReady), errors.Is(err, clusters.ErrSuspended):
		f.Error = err.Error()
		return h.renderJoinTokens(c, http.StatusConflict, f)
	case err != nil:
		return err
	}
	h.flash(c, "FlashJoinTokenCreated")
	return redirect(c, fmt.Sprintf("/clusters/%d/tokens", id))
}

// showJoinTokenLive is the live fragment of one token: status, uses,
// joined nodes and join diagnostics.
func (h *Handlers) showJoinTokenLive(c echo.Context) error {
	clusterID, t, err := h.ownJoinToken(c)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return render(c, http.StatusOK, views.JoinTokenLive(clusterID, t, true))
}

// maxStreamedTokens bounds the tokens one stream follows: a page shows
// the live ones, which are few.
const maxStreamedTokens = 50

// streamJoinTokens is GET /clusters/:id/tokens/stream?ids=: the live part
// of the page's live tokens (JoinTokensUpdate) each time the cluster's
// tokens change, until none of them is live. Each token is read as its
// poller reads it (JoinTokens.One): another's is not found.
func (h *Handlers) streamJoinTokens(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	clusterID, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	var follow []int64
	for s := range strings.SplitSeq(c.QueryParam("ids"), ",") {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || len(follow) == maxStreamedTokens {
			return echo.ErrNotFound
		}
		follow = append(follow, id)
	}
	ctx := c.Request().Context()
	return h.streamLive(c, clusterID, func() (liveMessage, error) {
		var shown []views.JoinToken
		var live []int64
		for _, id := range follow {
			t, err := h.JoinTokens.One(ctx, who, clusterPermission(c), clusterID, id)
			if errors.Is(err, jointokens.ErrNotFound) {
				return liveMessage{}, echo.ErrNotFound
			}
			if err != nil {
				return liveMessage{}, err
			}
			v := h.joinTokenView(t)
			shown = append(shown, v)
			if v.Live {
				live = append(live, id)
			}
		}
		follow = live
		done := len(live) == 0
		html, err := renderHTML(ctx, views.JoinTokensUpdate(clusterID, shown, done))
		return liveMessage{html: html, done: done}, err
	})
}

func (h *Handlers) showRevokeJoinTokenPage(c echo.Context) error {
	_, t, err := h.ownJoinToken(c)
	if err != nil {
		return err
	}
	cl, err := h.memberCluster(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.JoinTokenRevokePage(clusterView(cl), t))
}

func (h *Handlers) revokeJoinToken(c echo.Context) error {
	clusterID, t, err := h.ownJoinToken(c)
	if err != nil {
		return err
	}
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	_, err = h.JoinTokens.Revoke(c.Request().Context(), who, clusterID, t.ID, actor(c))
	if errors.Is(err, clusters.ErrSuspended) || errors.Is(err, jointokens.ErrRevokeNotReady) {
		h.flashError(c, err.Error())
		return redirect(c, fmt.Sprintf("/clusters/%d/tokens", clusterID))
	}
	if err != nil {
		return err
	}
	h.flash(c, "FlashJoinTokenRevoked")
	return redirect(c, fmt.Sprintf("/clusters/%d/tokens", clusterID))
}

// ownJoinToken is the signed-in user's token named in the path, with the
// nodes that joined with it; anyone else's is not found.
func (h *Handlers) ownJoinToken(c echo.Context) (int64, views.JoinToken, error) {
	who, err := h.acting(c)
	if err != nil {
		return 0, views.JoinToken{}, err
	}
	clusterID, err := clusterIDParam(c)
	if err != nil {
		return 0, views.JoinToken{}, err
	}
	id, err := strconv.ParseInt(c.Param("joinToken"), 10, 64)
	if err != nil {
		return 0, views.JoinToken{}, echo.ErrNotFound
	}
	t, err := h.JoinTokens.One(c.Request().Context(), who, clusterPermission(c), clusterID, id)
	if errors.Is(err, jointokens.ErrNotFound) {
		return 0, views.JoinToken{}, echo.ErrNotFound
	}
	if err != nil {
		return 0, views.JoinToken{}, err
	}
	return clusterID, h.joinTokenView(t), nil
}

// joinTokenLiveAfterUse is how long the console keeps watching a used-up
// token: the script of its last machine may still be reporting.
const joinTokenLiveAfterUse = time.Hour

func (h *Handlers) joinTokenView(t jointokens.Listed) views.JoinToken {
	v := views.JoinToken{
		ID: t.Token.ID, TokenID: t.Token.TokenID, Description: t.Token.Description, Status: t.Status,
		Uses: t.Token.Uses, MaxUses: t.Token.MaxUses.Int32, Expires: t.Token.ExpiresAt.Time,
		Live: t.Status == jointokens.StatusActive ||
			(t.Status == jointokens.StatusUsedUp && t.Token.UsedUpAt.Valid && time.Since(t.Token.UsedUpAt.Time) < joinTokenLiveAfterUse),
	}
	if t.Value != "" {
		v.Command = joinCommand(h.BaseURL, t.Value)
	}
	for _, n := range t.Nodes {
		v.Nodes = append(v.Nodes, views.JoinedNode{Name: n.NodeName, Registered: n.RegisteredAt.Valid})
	}
	for _, e := range t.Events {
		v.Events = append(v.Events, views.JoinEvent{Host: e.Host, Step: e.Step, Status: e.Status, Message: e.Message, ClientIP: e.ClientIp, Time: e.CreatedAt.Time})
	}
	return v
}

// joinCommand is what a node owner runs to join a machine.
func joinCommand(baseURL, token string) string {
	return fmt.Sprintf("curl -fsSL %s/join/%s | sudo sh", strings.TrimRight(baseURL, "/"), token)
}
