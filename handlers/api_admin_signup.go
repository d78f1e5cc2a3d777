package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminsignup"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/signup"
)

// apiSignUp is who may sign up: the policy (open, invite_only or closed)
// and the domains addresses must be at (none: any).
type apiSignUp struct {
	Policy         string   `json:"policy"`
	AllowedDomains []string `json:"allowed_domains"`
}

type apiSignUpPatch struct {
	Policy         *string   `json:"policy"`
	AllowedDomains *[]string `json:"allowed_domains"`
}

var signUpAPIFields = map[string]string{signup.FieldPolicy: "policy", signup.FieldDomains: "allowed_domains"}

// showAPISignUp is GET /api/v1/admin/settings/sign-up.
func (h *Handlers) showAPISignUp(c echo.Context) error {
	if err := setETag(c, h.AdminSignUp.Tag); err != nil {
		return err
	}
	st, err := h.AdminSignUp.Load(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiSignUp{Policy: st.Policy, AllowedDomains: append([]string{}, st.AllowedDomains...)})
}

// updateAPISignUp is PATCH /api/v1/admin/settings/sign-up. The domains
// are kept as the form keeps them: lower case, without "@", sorted, each
// once.
func (h *Handlers) updateAPISignUp(c echo.Context) error {
	var body apiSignUpPatch
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	st, err := h.AdminSignUp.Load(ctx)
	if err != nil {
		return err
	}
	patch(&st.Policy, body.Policy)
	if body.AllowedDomains != nil {
		st.AllowedDomains = signup.ParseDomains(strings.Join(*body.AllowedDomains, "\n"))
	}
	if _, err := h.AdminSignUp.Apply(ctx, st, actor(c)); err != nil {
		return adminAPIError(err, signUpAPIFields)
	}
	return h.showAPISignUp(c)
}

// apiInvitation is an invitation: State is pending, accepted, expired or
// revoked; InvitedBy the inviting admin's address ("" once their account
// is gone).
type apiInvitation struct {
	ID         int64      `json:"id"`
	Email      string     `json:"email"`
	State      string     `json:"state"`
	CreatedAt  time.Time  `json:"created_at"`
	SentAt     time.Time  `json:"sent_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	AcceptedAt *time.Time `json:"accepted_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	InvitedBy  string     `json:"invited_by"`
}

type apiInvitationList struct {
	Invitations []apiInvitation `json:"invitations"`
	Next        string          `json:"next,omitempty"`
}

func apiInvitationOf(i adminsignup.Invitation) apiInvitation {
	optional := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		t = t.UTC()
		return &t
	}
	return apiInvitation{
		ID: i.ID, Email: i.Email, State: i.State, CreatedAt: i.CreatedAt.UTC(), SentAt: i.SentAt.UTC(), ExpiresAt: i.ExpiresAt.UTC(),
		AcceptedAt: optional(i.AcceptedAt), RevokedAt: optional(i.RevokedAt), InvitedBy: i.InvitedBy,
	}
}

// listAPIInvitations is GET /api/v1/admin/invitations: newest first, a
// page at a time.
func (h *Handlers) listAPIInvitations(c echo.Context) error {
	ctx := c.Request().Context()
	items, next, err := idPage(c, func(before int64, limit int32) ([]adminsignup.Invitation, error) {
		return h.AdminSignUp.Page(ctx, before, limit)
	}, func(i adminsignup.Invitation) int64 { return i.ID }, apiInvitationOf)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiInvitationList{Invitations: items, Next: next})
}

// createAPIInvitation is POST /api/v1/admin/invitations: invite an
// address and mail it the link, in the admin's language.
func (h *Handlers) createAPIInvitation(c echo.Context) error {
	var body struct {
		Email string `json:"email"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	inv, err := h.AdminSignUp.Invite(ctx, body.Email, locale.Lang(ctx), actor(c))
	if err != nil {
		return adminAPIError(err, nil)
	}
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/api/v1/admin/invitations/%d", inv.ID))
	return h.answerAPIInvitation(c, http.StatusCreated, inv.ID)
}

// showAPIInvitation is GET /api/v1/admin/invitations/:id.
func (h *Handlers) showAPIInvitation(c echo.Context) error {
	id, err := invitationIDParam(c)
	if err != nil {
		return err
	}
	return h.answerAPIInvitation(c, http.StatusOK, id)
}

// resendAPIInvitation is POST /api/v1/admin/invitations/:id/resend: a new
// link, mailed; the old one stops working.
func (h *Handlers) resendAPIInvitation(c echo.Context) error {
	return h.apiInvitationAction(c, func(id int64) error {
		ctx := c.Request().Context()
		_, err := h.AdminSignUp.Resend(ctx, id, locale.Lang(ctx), actor(c))
		return err
	})
}

// revokeAPIInvitation is DELETE /api/v1/admin/invitations/:id: its link
// stops working; the invitation stays in the list, revoked.
func (h *Handlers) revokeAPIInvitation(c echo.Context) error {
	return h.apiInvitationAction(c, func(id int64) error {
		_, err := h.AdminSignUp.Revoke(c.Request().Context(), id, actor(c))
		return err
	})
}

// errInvitationNotFound answers for an invitation that does not exist.
var errInvitationNotFound = echo.NewHTTPError(http.StatusNotFound, "ErrAPIInvitationNotFound")

func invitationIDParam(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return 0, errInvitationNotFound
	}
	return id, nil
}

// apiInvitationAction runs an action on the invitation :id and answers
// with the invitation as it is then: 404 for none, 409 for one accepted
// or revoked already.
func (h *Handlers) apiInvitationAction(c echo.Context, action func(int64) error) error {
	id, err := invitationIDParam(c)
	if err != nil {
		return err
	}
	err = action(id)
	switch {
	case errors.Is(err, adminsignup.ErrNotFound):
		return errInvitationNotFound
	case errors.Is(err, adminsignup.ErrNotOpen):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	case err != nil:
		return adminAPIError(err, nil)
	}
	return h.answerAPIInvitation(c, http.StatusOK, id)
}

// answerAPIInvitation answers with the invitation id as the list shows it.
func (h *Handlers) answerAPIInvitation(c echo.Context, status int, id int64) error {
	inv, err := h.AdminSignUp.Get(c.Request().Context(), id)
	if errors.Is(err, adminsignup.ErrNotFound) {
		return errInvitationNotFound
	}
	if err != nil {
		return err
	}
	return c.JSON(status, apiInvitationOf(inv))
}
