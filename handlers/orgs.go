package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// sessionOrg and sessionOrgName are the session keys under which the
// console kept the organization it works in, and its name, before that
// moved to the user session (rememberOrg): a browser signed in before
// still finds its choice there once.
const (
	sessionOrg     = "org"
	sessionOrgName = "org_name"
)

// currentOrg is the organization the signed-in user works in: the one
// their session names while they are a member of it, else their personal
// organization. The session query reads the one it names with the
// member's role (loadUser), so this reads it only when that found none.
func (h *Handlers) currentOrg(c echo.Context) (orgs.Membership, error) {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	if id := h.sessions.GetInt64(ctx, sessionOrg); id != 0 {
		m, err := h.Orgs.Get(ctx, u.ID, id)
		if err == nil {
			return m, h.rememberOrg(c, m.Org)
		}
		if !errors.Is(err, orgs.ErrNotFound) {
			return m, err
		}
		// Removed from it, or it was another account's in this browser.
		h.sessions.Remove(ctx, sessionOrg)
		h.sessions.Remove(ctx, sessionOrgName)
	}
	m, err := h.Orgs.Personal(ctx, u.ID)
	if err != nil {
		return m, err
	}
	// Remembered: the next request reads it with the session.
	return m, h.rememberOrg(c, m.Org)
}

// ctxActing is the Echo context key of who acts in which organization:
// the request's API key's (requireAPIKey), or the console's once read.
const ctxActing = "acting"

// acting is who acts in which organization: for the API, the key's
// organization with at most its role; in the console, the current
// organization (currentOrg) with the member's role. The services check
// the membership and the role again in their queries.
func (h *Handlers) acting(c echo.Context) (orgs.Acting, error) {
	if a, ok := c.Get(ctxActing).(orgs.Acting); ok {
		return a, nil
	}
	u, _ := currentUser(c)
	m, ok := c.Get(ctxSessionOrg).(sessionOrgRow)
	if !ok {
		cur, err := h.currentOrg(c)
		if err != nil {
			return orgs.Acting{}, err
		}
		m = sessionOrgRow{ID: cur.Org.ID, Name: cur.Org.Name, ViewerKubeconfig: cur.Org.ViewerKubeconfig, Role: cur.Role}
	}
	page := views.PageOf(c.Request().Context())
	page.Org, page.ReadOnly, page.ViewerKubeconfig = m.Name, !orgs.Allows(m.Role, orgs.Operate), m.ViewerKubeconfig
	a := orgs.Acting{OrgID: m.ID, UserID: u.ID, Cap: m.Role}
	c.Set(ctxActing, a) // read once a request
	return a, nil
}

func (h *Handlers) showOrgsPage(c echo.Context) error {
	return h.renderOrgsPage(c, http.StatusOK, views.NewForm())
}

// renderOrgsPage shows the signed-in user's organizations above the
// create form f.
func (h *Handlers) renderOrgsPage(c echo.Context, status int, f views.Form) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	current, err := h.acting(c)
	if err != nil {
		return err
	}
	list, err := h.Orgs.List(ctx, u.ID)
	if err != nil {
		return err
	}
	rows := make([]views.Org, len(list))
	for i, m := range list {
		rows[i] = orgView(m)
		rows[i].Current = m.Org.ID == current.OrgID
	}
	h.viewAsAPICall(c, "listOrganizations", nil)
	return render(c, status, views.OrgsPage(f, rows))
}

// createOrg makes an organization of which the user is the owner, and
// works in it from now on.
func (h *Handlers) createOrg(c echo.Context) error {
	f := formFrom(c, "name")
	o, err := h.Orgs.Create(c.Request().Context(), f.Value("name"), actor(c))
	var fe input.Errors
	if errors.As(err, &fe) {
		for k, v := range fe {
			f.Errors[k] = v
		}
		return h.renderOrgsPage(c, http.StatusUnprocessableEntity, f)
	}
	if err != nil {
		return err
	}
	if err := h.rememberOrg(c, o); err != nil {
		return err
	}
	h.flash(c, "FlashOrgCreated")
	return redirect(c, orgPath(o.ID))
}

// switchOrg makes organization :id, of which the user is a member, the
// one the console works in.
func (h *Handlers) switchOrg(c echo.Context) error {
	m, err := h.memberOrg(c)
	if err != nil {
		return err
	}
	if err := h.rememberOrg(c, m.Org); err != nil {
		return err
	}
	h.flash(c, "FlashOrgSwitched")
	if next := c.FormValue("next"); next != "" {
		// Back to the page that asked (a cluster of this organization's).
		return redirect(c, safeNext(next))
	}
	return redirect(c, orgsPath)
}

func (h *Handlers) showOrgPage(c echo.Context) error {
	m, err := h.memberOrg(c)
	if err != nil {
		return err
	}
	return h.renderOrgPage(c, http.StatusOK, m, views.NewForm())
}

// renderOrgPage shows organization m's members and invitations to its
// member, with the invitation form f to those who may invite.
func (h *Handlers) renderOrgPage(c echo.Context, status int, m orgs.Membership, f views.Form) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	people, err := h.Orgs.Members(ctx, u.ID, m.Org.ID)
	if err != nil {
		return orgRefusal(err)
	}
	invitations, err := h.Orgs.Invitations(ctx, u.ID, m.Org.ID)
	if err != nil {
		return orgRefusal(err)
	}
	p := views.OrgPage{
		Org: orgView(m), Members: make([]views.OrgMember, len(people)),
		CanInvite: orgs.Allows(m.Role, orgs.ManageMembers), Invite: f,
		ViewerKubeconfig: m.Org.ViewerKubeconfig, CanSetViewerKubeconfig: orgs.Allows(m.Role, orgs.ViewerKubeconfig),
		CanDelete: !m.Personal() && orgs.Allows(m.Role, orgs.DeleteOrganization),
	}
	for _, inv := range invitations {
		p.Invitations = append(p.Invitations, views.OrgInvitation{
			ID: inv.ID, Email: inv.Email, Role: inv.Role, State: inv.State, InvitedBy: inv.InvitedBy,
			ExpiresAt: inv.ExpiresAt.Time, Revocable: p.CanInvite && inv.State == orgs.InvitationPending,
		})
	}
	for i, person := range people {
		p.Members[i] = orgMemberView(m, person, u.ID)
	}
	for _, r := range orgs.Roles {
		if r != orgs.Owner || orgs.Allows(m.Role, orgs.ManageOwners) {
			p.Roles = append(p.Roles, string(r))
		}
	}
	h.viewAsAPICall(c, "getOrganization", nil, strconv.FormatInt(m.Org.ID, 10))
	return render(c, status, views.OrgDetailPage(p))
}

// inviteToOrg invites the posted address to organization :id in the
// posted role, mailed in the inviter's language; the service decides
// whether the user may.
func (h *Handlers) inviteToOrg(c echo.Context) error {
	ctx := c.Request().Context()
	m, err := h.memberOrg(c)
	if err != nil {
		return err
	}
	f := formFrom(c, orgs.FieldEmail, "role")
	_, err = h.Orgs.Invite(ctx, m.Org.ID, f.Value(orgs.FieldEmail), orgs.Role(f.Value("role")), locale.Lang(ctx), actor(c))
	var fe input.Errors
	if errors.As(err, &fe) {
		for k, v := range fe {
			f.Errors[k] = v
		}
		return h.renderOrgPage(c, http.StatusUnprocessableEntity, m, f)
	}
	if err != nil {
		return orgRefusal(err)
	}
	h.flash(c, "FlashOrgInvited")
	return redirect(c, orgPath(m.Org.ID))
}

// revokeOrgInvitation stops invitation :inv of organization :id working.
func (h *Handlers) revokeOrgInvitation(c echo.Context) error {
	id, err := pathID(c, "id", echo.ErrNotFound)
	if err != nil {
		return err
	}
	invID, err := pathID(c, "inv", echo.ErrNotFound)
	if err != nil {
		return err
	}
	err = h.Orgs.RevokeInvitation(c.Request().Context(), id, invID, actor(c))
	switch {
	case errors.Is(err, orgs.ErrInvitationNotPending):
		h.flashError(c, orgs.ErrInvitationNotPending.Error())
	case err != nil:
		return orgRefusal(err)
	default:
		h.flash(c, "FlashOrgInvitationRevoked")
	}
	return redirect(c, orgPath(id))
}

// showOrgInvitationPage shows the invitation an emailed link names to
// the signed-in user (requireUser sends others to sign in or sign up
// first, and back here), with the button that accepts it when it is
// theirs and pending.
func (h *Handlers) showOrgInvitationPage(c echo.Context) error {
	u, _ := currentUser(c)
	inv, err := h.Orgs.Lookup(c.Request().Context(), c.Param("token"))
	if errors.Is(err, orgs.ErrInvitationUnknown) {
		return echo.NewHTTPError(http.StatusNotFound, err.Error())
	}
	if err != nil {
		return err
	}
	p := views.OrgInvitationPage{
		Token: c.Param("token"), Organization: inv.Organization, Role: inv.Invitation.Role,
		InvitedBy: inv.InvitedBy, Email: inv.Invitation.Email, State: inv.State,
	}
	switch {
	case inv.State != orgs.InvitationPending:
		p.Problem = orgs.ErrInvitationNotPending.Error()
	case !strings.EqualFold(inv.Invitation.Email, u.Email):
		p.Problem = orgs.ErrInvitationOtherEmail.Error()
	}
	return render(c, http.StatusOK, views.OrgInvitationAcceptPage(p))
}

// acceptOrgInvitation makes the signed-in user a member as the link's
// invitation says, and works in that organization from now on.
func (h *Handlers) acceptOrgInvitation(c echo.Context) error {
	u, _ := currentUser(c)
	id, err := h.Orgs.Accept(c.Request().Context(), c.Param("token"), u, actor(c))
	switch {
	case errors.Is(err, orgs.ErrInvitationUnknown):
		return echo.NewHTTPError(http.StatusNotFound, err.Error())
	case errors.Is(err, orgs.ErrInvitationNotPending), errors.Is(err, orgs.ErrInvitationOtherEmail):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	case err != nil:
		return err
	}
	// Remembered with its name, which the menu of the next page shows.
	m, err := h.Orgs.Get(c.Request().Context(), u.ID, id)
	if err != nil {
		return err
	}
	if err := h.rememberOrg(c, m.Org); err != nil {
		return err
	}
	h.flash(c, "FlashOrgInvitationAccepted")
	return redirect(c, orgPath(id))
}

// setOrgMemberRole gives member :user of organization :id the posted
// role; the service decides whether the user may.
func (h *Handlers) setOrgMemberRole(c echo.Context) error {
	id, userID, err := orgMemberParams(c)
	if err != nil {
		return err
	}
	err = h.Orgs.SetRole(c.Request().Context(), id, userID, orgs.Role(c.FormValue("role")), actor(c))
	if done, err := h.orgKept(c, id, err); done {
		return err
	}
	h.flash(c, "FlashOrgRoleChanged")
	return redirect(c, orgPath(id))
}

// showRemoveOrgMemberPage asks before removing member :user, to those who
// may remove them.
func (h *Handlers) showRemoveOrgMemberPage(c echo.Context) error {
	u, _ := currentUser(c)
	m, err := h.memberOrg(c)
	if err != nil {
		return err
	}
	userID, err := pathID(c, "user", echo.ErrNotFound)
	if err != nil {
		return err
	}
	// The member's row, through the list a member may read.
	people, err := h.Orgs.Members(c.Request().Context(), u.ID, m.Org.ID)
	if err != nil {
		return orgRefusal(err)
	}
	for _, person := range people {
		if person.UserID != userID {
			continue
		}
		v := orgMemberView(m, person, u.ID)
		if !v.Removable {
			return orgRefusal(orgs.ErrForbidden)
		}
		return render(c, http.StatusOK, views.OrgRemoveMemberPage(orgView(m), v))
	}
	return echo.ErrNotFound
}

func (h *Handlers) removeOrgMember(c echo.Context) error {
	id, userID, err := orgMemberParams(c)
	if err != nil {
		return err
	}
	err = h.Orgs.Remove(c.Request().Context(), id, userID, actor(c))
	if done, err := h.orgKept(c, id, err); done {
		return err
	}
	h.flash(c, "FlashOrgMemberRemoved")
	return redirect(c, orgPath(id))
}

// showLeaveOrgPage asks before the user leaves organization :id.
func (h *Handlers) showLeaveOrgPage(c echo.Context) error {
	m, err := h.memberOrg(c)
	if err != nil {
		return err
	}
	if m.Personal() {
		// Nobody leaves their personal organization; the page offers no
		// way to.
		return echo.ErrNotFound
	}
	return render(c, http.StatusOK, views.OrgLeavePage(orgView(m)))
}

// leaveOrg takes the user out of organization :id; the console then works
// in their personal organization, if it worked in that one.
func (h *Handlers) leaveOrg(c echo.Context) error {
	u, _ := currentUser(c)
	id, err := pathID(c, "id", echo.ErrNotFound)
	if err != nil {
		return err
	}
	err = h.Orgs.Remove(c.Request().Context(), id, u.ID, actor(c))
	if done, err := h.orgKept(c, id, err); done {
		return err
	}
	// The session names it no longer: the session query matches no
	// membership, and the next page works in the personal organization.
	h.flash(c, "FlashOrgLeft")
	return redirect(c, orgsPath)
}

// memberOrg is organization :id as the signed-in user, a member of it,
// sees it; not found for anyone else.
func (h *Handlers) memberOrg(c echo.Context) (orgs.Membership, error) {
	u, _ := currentUser(c)
	id, err := pathID(c, "id", echo.ErrNotFound)
	if err != nil {
		return orgs.Membership{}, err
	}
	m, err := h.Orgs.Get(c.Request().Context(), u.ID, id)
	if err != nil {
		return m, orgRefusal(err)
	}
	return m, nil
}

// orgKept answers a change of organization id's members that the service
// refused (done is then true, and err the answer): what keeps the
// organization an owner is said on its page; the rest is orgRefusal's.
func (h *Handlers) orgKept(c echo.Context, id int64, err error) (done bool, _ error) {
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, orgs.ErrLastOwner):
		h.flashError(c, orgs.ErrLastOwner.Error())
	case errors.Is(err, orgs.ErrPersonalOwner):
		h.flashError(c, orgs.ErrPersonalOwner.Error())
	default:
		return true, orgRefusal(err)
	}
	return true, redirect(c, orgPath(id))
}

// orgRefusal is the answer to an organization service's refusal: 404 for
// an organization, member or invitation the user cannot see, 403 with the
// reason for what their role does not allow. Other errors pass unchanged.
func orgRefusal(err error) error {
	switch {
	case errors.Is(err, orgs.ErrNotFound), errors.Is(err, orgs.ErrMemberNotFound), errors.Is(err, orgs.ErrInvitationNotFound):
		return echo.ErrNotFound
	case errors.Is(err, orgs.ErrForbidden):
		return echo.NewHTTPError(http.StatusForbidden, orgs.ErrForbidden.Error())
	}
	return err
}

// orgMemberParams are the path's organization (:id) and member (:user).
func orgMemberParams(c echo.Context) (id, userID int64, err error) {
	if id, err = pathID(c, "id", echo.ErrNotFound); err != nil {
		return 0, 0, err
	}
	userID, err = pathID(c, "user", echo.ErrNotFound)
	return id, userID, err
}

const orgsPath = "/orgs"

func orgPath(id int64) string { return orgsPath + "/" + strconv.FormatInt(id, 10) }

func orgView(m orgs.Membership) views.Org {
	return views.Org{ID: m.Org.ID, Name: m.Org.Name, Personal: m.Personal(), Role: string(m.Role)}
}

// orgMemberView is person as member m of the organization sees them: the
// roles in Allows say which controls m's page shows (the service checks
// again on each change). Nobody changes the personal organization's owner.
func orgMemberView(m orgs.Membership, person orgs.Person, self int64) views.OrgMember {
	manages := orgs.Allows(m.Role, orgs.ManageMembers) &&
		(person.Role != orgs.Owner || orgs.Allows(m.Role, orgs.ManageOwners)) &&
		(!m.Org.PersonalOf.Valid || m.Org.PersonalOf.Int64 != person.UserID)
	return views.OrgMember{
		UserID: person.UserID, Email: person.Email, Name: person.Name, Role: string(person.Role),
		Self: person.UserID == self, Changeable: manages, Removable: manages && person.UserID != self,
	}
}

// rememberOrg makes o the organization the console works in: its user
// session names it from now on (a browser signed in before this kept it in
// the session's data, which is then cleared).
func (h *Handlers) rememberOrg(c echo.Context, o queries.Organization) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	sid, _ := c.Get(ctxSessionID).(string)
	if err := h.Accounts.SetSessionOrg(ctx, sid, u.ID, o.ID); err != nil {
		return err
	}
	if h.sessions.Exists(ctx, sessionOrg) {
		h.sessions.Remove(ctx, sessionOrg)
		h.sessions.Remove(ctx, sessionOrgName)
	}
	// The menu of this very page.
	views.PageOf(ctx).Org = o.Name
	return nil
}
