package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/orgs"
)

// apiJoinToken is a join token as the API shows it. Token and Command are
// there while the token is active: the command is what a machine runs to
// join the cluster.
type apiJoinToken struct {
	ID          int64                `json:"id"`
	TokenID     string               `json:"token_id"`
	Description string               `json:"description"`
	Status      string               `json:"status"`
	Uses        int32                `json:"uses"`
	MaxUses     *int32               `json:"max_uses"`
	ExpiresAt   *time.Time           `json:"expires_at"`
	CreatedAt   time.Time            `json:"created_at"`
	RevokedAt   *time.Time           `json:"revoked_at"`
	Token       string               `json:"token,omitempty"`
	Command     string               `json:"command,omitempty"`
	Nodes       []apiJoinTokenMember `json:"nodes"`
}

// apiJoinTokenMember is a machine that joined with a token: registered
// once its Node exists.
type apiJoinTokenMember struct {
	Name       string `json:"name"`
	Registered bool   `json:"registered"`
}

// apiJoinTokenBody is the body of POST .../join-tokens. Absent, the
// lifetime is an hour and the token joins one machine; max_uses 0 is
// unlimited.
type apiJoinTokenBody struct {
	Description string `json:"description"`
	Lifetime    string `json:"lifetime"`
	MaxUses     *int   `json:"max_uses"`
}

func (h *Handlers) apiJoinTokenOf(t jointokens.Listed) apiJoinToken {
	tok := t.Token
	out := apiJoinToken{
		ID: tok.ID, TokenID: tok.TokenID, Description: tok.Description, Status: t.Status, Uses: tok.Uses,
		CreatedAt: tok.CreatedAt.Time.UTC(), Nodes: make([]apiJoinTokenMember, len(t.Nodes)),
	}
	if tok.MaxUses.Valid {
		out.MaxUses = &tok.MaxUses.Int32
	}
	if tok.ExpiresAt.Valid {
		at := tok.ExpiresAt.Time.UTC()
		out.ExpiresAt = &at
	}
	if tok.RevokedAt.Valid {
		at := tok.RevokedAt.Time.UTC()
		out.RevokedAt = &at
	}
	if t.Value != "" {
		out.Token, out.Command = t.Value, joinCommand(h.BaseURL, t.Value)
	}
	for i, n := range t.Nodes {
		out.Nodes[i] = apiJoinTokenMember{Name: n.NodeName, Registered: n.RegisteredAt.Valid}
	}
	return out
}

// apiJoinTokenList is one page of a cluster's join tokens, newest first.
type apiJoinTokenList struct {
	JoinTokens []apiJoinToken `json:"join_tokens"`
	Next       string         `json:"next,omitempty"`
}

// listAPIJoinTokens is GET /api/v1/clusters/{id}/join-tokens: the
// cluster's tokens, newest first, a page at a time.
func (h *Handlers) listAPIJoinTokens(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	p, before, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	list, err := h.JoinTokens.Page(c.Request().Context(), who, id, before, int32(p.Limit)+1)
	if errors.Is(err, jointokens.ErrNotFound) {
		return errClusterNotFound
	}
	if err != nil {
		return err
	}
	list, next := pageOf(list, p.Limit, func(t jointokens.Listed) string { return idCursor(t.Token.ID) })
	out := apiJoinTokenList{JoinTokens: make([]apiJoinToken, len(list)), Next: next}
	for i, t := range list {
		out.JoinTokens[i] = h.apiJoinTokenOf(t)
	}
	return c.JSON(http.StatusOK, out)
}

// createAPIJoinToken is POST /api/v1/clusters/{id}/join-tokens: 201 with
// the token and its join command.
func (h *Handlers) createAPIJoinToken(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	var body apiJoinTokenBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	in := jointokens.Input{Description: body.Description, Lifetime: body.Lifetime}
	if body.MaxUses != nil {
		in.Uses, in.MaxUses = jointokens.UsesN, strconv.Itoa(*body.MaxUses)
		if *body.MaxUses == 0 {
			in.Uses = jointokens.UsesUnlimited
		}
	}
	ctx := c.Request().Context()
	created, err := h.JoinTokens.Create(ctx, who, id, in, actor(c))
	if errors.Is(err, jointokens.ErrNotFound) {
		return errClusterNotFound
	}
	if err != nil {
		return joinTokenAPIError(err)
	}
	// New: active, with its value, and no machine joined yet.
	t := jointokens.Listed{Token: created.Token, Status: jointokens.StatusActive, Value: created.Value}
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/api/v1/clusters/%d/join-tokens/%d", id, t.Token.ID))
	return c.JSON(http.StatusCreated, h.apiJoinTokenOf(t))
}

// showAPIJoinToken is GET /api/v1/clusters/{id}/join-tokens/{token}.
func (h *Handlers) showAPIJoinToken(c echo.Context) error {
	clusterID, tokenID, err := joinTokenParams(c)
	if err != nil {
		return err
	}
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	t, err := h.JoinTokens.One(c.Request().Context(), who, orgs.Read, clusterID, tokenID)
	if err != nil {
		return joinTokenAPIError(err)
	}
	return c.JSON(http.StatusOK, h.apiJoinTokenOf(t))
}

// revokeAPIJoinToken is DELETE /api/v1/clusters/{id}/join-tokens/{token}:
// the token stops joining machines; those that joined stay. Revoking it
// again changes nothing.
func (h *Handlers) revokeAPIJoinToken(c echo.Context) error {
	clusterID, tokenID, err := joinTokenParams(c)
	if err != nil {
		return err
	}
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := h.JoinTokens.Revoke(ctx, who, clusterID, tokenID, actor(c)); err != nil {
		return joinTokenAPIError(err)
	}
	t, err := h.JoinTokens.One(ctx, who, orgs.Read, clusterID, tokenID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, h.apiJoinTokenOf(t))
}

// joinTokenParams are the cluster and token ids of the path; a token id
// that is no number is not found.
func joinTokenParams(c echo.Context) (int64, int64, error) {
	clusterID, err := clusterIDParam(c)
	if err != nil {
		return 0, 0, err
	}
	id, err := strconv.ParseInt(c.Param("joinToken"), 10, 64)
	if err != nil {
		return 0, 0, echo.NewHTTPError(http.StatusNotFound, jointokens.ErrNotFound.Error())
	}
	return clusterID, id, nil
}

// joinTokenAPIError answers a token action's error: field errors 422 (by
// the error handler), a token not found 404, a cluster not ready or
// suspended 409.
func joinTokenAPIError(err error) error {
	switch {
	case errors.Is(err, jointokens.ErrNotFound):
		return echo.NewHTTPError(http.StatusNotFound, jointokens.ErrNotFound.Error())
	case errors.Is(err, jointokens.ErrClusterNotReady), errors.Is(err, jointokens.ErrRevokeNotReady):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	case errors.Is(err, clusters.ErrSuspended):
		return errClusterSuspended
	}
	return err
}
