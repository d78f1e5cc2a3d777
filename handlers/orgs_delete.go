package handlers

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/views"
)

// Deleting an organization, and its settings, in the console: the
// owners' (orgs.DeleteOrganization, orgs.ViewerKubeconfig). The service
// checks the role again in SQL.

// showDeleteOrgPage asks an owner of a team to type its name before it is
// deleted: 403 for its other members, 404 for anyone else. A personal
// organization's page says it cannot be deleted (409), without the form.
func (h *Handlers) showDeleteOrgPage(c echo.Context) error {
	m, err := h.deletableOrg(c)
	if err != nil {
		return err
	}
	f := views.NewForm()
	if m.Personal() {
		f.Error = orgs.ErrPersonalDelete.Error()
		return render(c, http.StatusConflict, views.OrgDeletePage(orgView(m), f))
	}
	return render(c, http.StatusOK, views.OrgDeletePage(orgView(m), f))
}

// deleteOrg deletes organization :id once its name is typed; what the
// service refuses (clusters left, an order pending) is said on the confirm page.
func (h *Handlers) deleteOrg(c echo.Context) error {
	m, err := h.deletableOrg(c)
	if err != nil {
		return err
	}
	f := formFrom(c, "confirm")
	if !m.Personal() && strings.TrimSpace(f.Value("confirm")) != m.Org.Name {
		f.Errors["confirm"] = "ErrOrgDeleteConfirm"
		return render(c, http.StatusUnprocessableEntity, views.OrgDeletePage(orgView(m), f))
	}
	err = h.Orgs.Delete(c.Request().Context(), m.Org.ID, actor(c))
	var many orgs.HasClustersError
	switch {
	case errors.As(err, &many):
		f.Error, f.ErrorData = many.Error(), many.Data()
	case errors.Is(err, orgs.ErrHasPendingOrder), errors.Is(err, orgs.ErrPersonalDelete):
		f.Error = err.Error()
	case err != nil:
		return orgRefusal(err)
	default:
		// The session worked in it: back to the personal organization.
		ctx := c.Request().Context()
		if h.sessions.GetInt64(ctx, sessionOrg) == m.Org.ID {
			h.sessions.Remove(ctx, sessionOrg)
			h.sessions.Remove(ctx, sessionOrgName)
		}
		h.flash(c, "FlashOrgDeleted")
		return redirect(c, orgsPath)
	}
	return render(c, http.StatusConflict, views.OrgDeletePage(orgView(m), f))
}

// deletableOrg is organization :id for a member whose role may delete
// it: 404 for a non-member, 403 for a member whose role does not allow
// it. The service checks again, and refuses a personal organization.
func (h *Handlers) deletableOrg(c echo.Context) (orgs.Membership, error) {
	m, err := h.memberOrg(c)
	if err != nil {
		return m, err
	}
	if !orgs.Allows(m.Role, orgs.DeleteOrganization) {
		return m, orgRefusal(orgs.ErrForbidden)
	}
	return m, nil
}

// setOrgSettings saves organization :id's settings from its page's form:
// whether its viewers may download a read-only kubeconfig (an unchecked
// box is not sent: false). The service refuses anyone but its owners.
func (h *Handlers) setOrgSettings(c echo.Context) error {
	id, err := pathID(c, "id", echo.ErrNotFound)
	if err != nil {
		return err
	}
	viewers := c.FormValue("viewer_kubeconfig") == "on"
	err = h.Orgs.Update(c.Request().Context(), id, orgs.Change{ViewerKubeconfig: &viewers}, actor(c))
	if err != nil {
		return orgRefusal(err)
	}
	h.flash(c, "FlashOrgSettingsSaved")
	return redirect(c, orgPath(id))
}
