package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/adminsignup"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/signup"
	"github.com/kubebyon/kubebyon/views"
)

// adminSignUpPath is the sign-up settings page.
const adminSignUpPath = "/admin/settings/sign-up"

func (h *Handlers) showAdminSignUpPage(c echo.Context) error {
	h.viewAsAPICall(c, "adminGetSignUp", nil)
	return h.renderAdminSignUp(c, http.StatusOK, nil, nil)
}

// renderAdminSignUp shows the page with policy and invite, the forms as
// submitted (nil: the stored settings, an empty address).
func (h *Handlers) renderAdminSignUp(c echo.Context, status int, policy, invite *views.Form) error {
	ctx := c.Request().Context()
	if policy == nil {
		st, err := h.AdminSignUp.Load(ctx)
		if err != nil {
			return err
		}
		f := views.NewForm()
		f.Values[signup.FieldPolicy] = st.Policy
		f.Values[signup.FieldDomains] = strings.Join(st.AllowedDomains, "\n")
		policy = &f
	}
	if invite == nil {
		f := views.NewForm()
		invite = &f
	}
	list, err := h.AdminSignUp.List(ctx)
	if err != nil {
		return err
	}
	m := views.AdminSignUp{
		Policy: *policy, Policies: signup.Policies, Invite: *invite,
		Invitations: make([]views.AdminInvitation, 0, len(list)),
		TTLDays:     int(signup.InvitationTTL / (24 * time.Hour)),
	}
	for _, i := range list {
		m.Invitations = append(m.Invitations, views.AdminInvitation{
			ID: i.ID, Email: i.Email, State: i.State, SentAt: i.SentAt, ExpiresAt: i.ExpiresAt,
			AcceptedAt: i.AcceptedAt, RevokedAt: i.RevokedAt, InvitedBy: i.InvitedBy,
		})
	}
	return render(c, status, views.AdminSignUpPage(m))
}

// saveAdminSignUp is POST /admin/settings/sign-up: the policy and the
// allowed domains.
func (h *Handlers) saveAdminSignUp(c echo.Context) error {
	f := formFrom(c, signup.FieldPolicy, signup.FieldDomains)
	next := signup.Settings{Policy: f.Value(signup.FieldPolicy), AllowedDomains: signup.ParseDomains(f.Value(signup.FieldDomains))}
	changed, err := h.AdminSignUp.Apply(c.Request().Context(), next, actor(c))
	if err != nil {
		return adminSaveError(c, err, &f, "ErrAdminSignUpNotSaved", nil, func(status int) error {
			return h.renderAdminSignUp(c, status, &f, nil)
		})
	}
	if len(changed) == 0 {
		h.flash(c, "FlashAdminSignUpUnchanged")
	} else {
		h.flash(c, "FlashAdminSignUpSaved")
	}
	return redirect(c, adminSignUpPath)
}

// createInvitation is POST /admin/settings/sign-up/invitations: invite an
// address and mail it the link, in the admin's language.
func (h *Handlers) createInvitation(c echo.Context) error {
	ctx := c.Request().Context()
	f := formFrom(c, adminsignup.FieldEmail)
	_, err := h.AdminSignUp.Invite(ctx, f.Value(adminsignup.FieldEmail), locale.Lang(ctx), actor(c))
	if err != nil {
		return adminSaveError(c, err, &f, "ErrInvitationNotSent", nil, func(status int) error {
			return h.renderAdminSignUp(c, status, nil, &f)
		})
	}
	h.flash(c, "FlashInvitationSent")
	return redirect(c, adminSignUpPath+"#invitations")
}

// resendInvitation is POST …/invitations/:id/resend: a new link, mailed.
func (h *Handlers) resendInvitation(c echo.Context) error {
	ctx := c.Request().Context()
	return h.invitationAction(c, "FlashInvitationResent", func(id int64) error {
		_, err := h.AdminSignUp.Resend(ctx, id, locale.Lang(ctx), actor(c))
		return err
	})
}

// revokeInvitation is POST …/invitations/:id/revoke.
func (h *Handlers) revokeInvitation(c echo.Context) error {
	return h.invitationAction(c, "FlashInvitationRevoked", func(id int64) error {
		_, err := h.AdminSignUp.Revoke(c.Request().Context(), id, actor(c))
		return err
	})
}

// invitationAction runs an action on the invitation :id and goes back to
// the list, with flash when done or why not.
func (h *Handlers) invitationAction(c echo.Context, flash string, action func(int64) error) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return echo.ErrNotFound
	}
	err = action(id)
	switch {
	case err == nil:
		h.flash(c, flash)
	case errors.Is(err, adminauth.ErrNotAdmin), errors.Is(err, adminsignup.ErrNotFound):
		return echo.ErrNotFound
	case errors.Is(err, adminsignup.ErrNotOpen):
		h.flashError(c, err.Error())
	default:
		return err
	}
	return redirect(c, adminSignUpPath+"#invitations")
}
