package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/orgs"
)

// The caller's organizations in the API (/api/v1/organizations): what
// orgs.go shows in the console, with the same service. A key reads and
// manages every organization its user is a member of, in the user's role
// there, which the service checks: another organization is 404, what the
// role does not allow 403. The organization the key itself acts in (its
// clusters) is marked acting.

// apiOrg is an organization as its member sees it in the API.
type apiOrg struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	// Kind is personal or team.
	Kind string `json:"kind"`
	// Role is the caller's.
	Role string `json:"role"`
	// Acting: the calling key acts in this organization.
	Acting           bool      `json:"acting"`
	ViewerKubeconfig bool      `json:"viewer_kubeconfig"`
	CreatedAt        time.Time `json:"created_at"`
}

func apiOrgOf(m orgs.Membership, acting orgs.Acting) apiOrg {
	kind := "team"
	if m.Personal() {
		kind = "personal"
	}
	return apiOrg{
		ID: m.Org.ID, Name: m.Org.Name, Kind: kind, Role: string(m.Role), Acting: m.Org.ID == acting.OrgID,
		ViewerKubeconfig: m.Org.ViewerKubeconfig, CreatedAt: m.Org.CreatedAt.Time.UTC(),
	}
}

// apiOrgList is one page of the caller's organizations, newest first.
type apiOrgList struct {
	Organizations []apiOrg `json:"organizations"`
	Next          string   `json:"next,omitempty"`
}

// apiOrgDetail is one organization, with its number of members.
type apiOrgDetail struct {
	apiOrg
	MemberCount int64 `json:"member_count"`
}

type apiOrgMember struct {
	UserID   int64     `json:"user_id"`
	Email    string    `json:"email"`
	Name     string    `json:"name"`
	Role     string    `json:"role"`
	JoinedAt time.Time `json:"joined_at"`
}

func apiOrgMemberOf(p orgs.Person) apiOrgMember {
	return apiOrgMember{UserID: p.UserID, Email: p.Email, Name: p.Name, Role: string(p.Role), JoinedAt: p.Joined.UTC()}
}

type apiOrgMemberList struct {
	Members []apiOrgMember `json:"members"`
	Next    string         `json:"next,omitempty"`
}

// apiOrgInvitation is an invitation to an organization: never its token,
// which only the mail carries.
type apiOrgInvitation struct {
	ID    int64  `json:"id"`
	Email string `json:"email"`
	Role  string `json:"role"`
	// State is pending, accepted, expired or revoked.
	State string `json:"state"`
	// InvitedByEmail is null for an account deleted since.
	InvitedByEmail *string    `json:"invited_by_email"`
	CreatedAt      time.Time  `json:"created_at"`
	ExpiresAt      time.Time  `json:"expires_at"`
	AcceptedAt     *time.Time `json:"accepted_at"`
	RevokedAt      *time.Time `json:"revoked_at"`
}

func apiOrgInvitationOf(inv orgs.Invitation) apiOrgInvitation {
	out := apiOrgInvitation{
		ID: inv.ID, Email: inv.Email, Role: inv.Role, State: inv.State,
		CreatedAt: inv.CreatedAt.Time.UTC(), ExpiresAt: inv.ExpiresAt.Time.UTC(),
		AcceptedAt: optionalTime(inv.AcceptedAt), RevokedAt: optionalTime(inv.RevokedAt),
	}
	if inv.InvitedBy != "" {
		out.InvitedByEmail = &inv.InvitedBy
	}
	return out
}

type apiOrgInvitationList struct {
	Invitations []apiOrgInvitation `json:"invitations"`
	Next        string             `json:"next,omitempty"`
}

// listAPIOrgs is GET /api/v1/organizations: the caller's organizations
// with their role in each, a page at a time.
func (h *Handlers) listAPIOrgs(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	p, err := apiPageOf(c)
	if err != nil {
		return err
	}
	list, err := h.Orgs.List(c.Request().Context(), who.UserID)
	if err != nil {
		return err
	}
	page, next, err := pageInMemory(list, p, func(m orgs.Membership) int64 { return m.Org.ID })
	if err != nil {
		return err
	}
	out := apiOrgList{Organizations: make([]apiOrg, len(page)), Next: next}
	for i, m := range page {
		out.Organizations[i] = apiOrgOf(m, who)
	}
	return c.JSON(http.StatusOK, out)
}

// createAPIOrg is POST /api/v1/organizations: a team's organization, of
// which the caller is the owner.
func (h *Handlers) createAPIOrg(c echo.Context) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	o, err := h.Orgs.Create(c.Request().Context(), body.Name, actor(c))
	if err != nil {
		return err
	}
	out, _, err := h.apiOrgDetail(c, o.ID)
	if err != nil {
		return err
	}
	return createdOnce(c, apiOrgPath(o.ID), out)
}

// showAPIOrg is GET /api/v1/organizations/{id}, with the ETag of what a
// PATCH changes (orgs.Tag).
func (h *Handlers) showAPIOrg(c echo.Context) error {
	id, err := pathID(c, "id", errOrgNotFound)
	if err != nil {
		return err
	}
	return h.answerAPIOrg(c, id)
}

// updateAPIOrg is PATCH /api/v1/organizations/{id}: the name (owners and
// admins) and whether viewers may download a kubeconfig (owners), those
// present, all or none; with If-Match, only over that ETag (conditional).
func (h *Handlers) updateAPIOrg(c echo.Context) error {
	id, err := pathID(c, "id", errOrgNotFound)
	if err != nil {
		return err
	}
	var body struct {
		Name             *string `json:"name"`
		ViewerKubeconfig *bool   `json:"viewer_kubeconfig"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	ch := orgs.Change{Name: body.Name, ViewerKubeconfig: body.ViewerKubeconfig}
	if err := h.Orgs.Update(c.Request().Context(), id, ch, actor(c)); err != nil {
		return apiOrgError(c, err)
	}
	return h.answerAPIOrg(c, id)
}

// deleteAPIOrg is DELETE /api/v1/organizations/{id}: an owner deletes a
// team with no clusters left and no orders (409 otherwise, as for a
// personal organization), with its members, invitations, webhook channels
// and the API keys made in it.
func (h *Handlers) deleteAPIOrg(c echo.Context) error {
	id, err := pathID(c, "id", errOrgNotFound)
	if err != nil {
		return err
	}
	err = h.Orgs.Delete(c.Request().Context(), id, actor(c))
	var many orgs.HasClustersError
	if errors.As(err, &many) {
		return c.JSON(http.StatusConflict, apiError{Error: apiErrorBody{
			Code: apiOrgConflicts[orgs.ErrHasClusters], Message: locale.T(c.Request().Context(), many.Error(), many.Data()),
		}})
	}
	if err != nil {
		return apiOrgError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

// answerAPIOrg answers with organization id and its entity tag, from one
// read.
func (h *Handlers) answerAPIOrg(c echo.Context, id int64) error {
	out, tag, err := h.apiOrgDetail(c, id)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", tag)
	return c.JSON(http.StatusOK, out)
}

// apiOrgDetail is organization id as the caller sees it, and its entity
// tag.
func (h *Handlers) apiOrgDetail(c echo.Context, id int64) (apiOrgDetail, string, error) {
	who, err := h.acting(c)
	if err != nil {
		return apiOrgDetail{}, "", err
	}
	d, err := h.Orgs.Detail(c.Request().Context(), who.UserID, id)
	if err != nil {
		return apiOrgDetail{}, "", apiOrgError(c, err)
	}
	tag, err := orgs.Tag(d.Org)
	if err != nil {
		return apiOrgDetail{}, "", err
	}
	return apiOrgDetail{apiOrg: apiOrgOf(d.Membership, who), MemberCount: d.MemberCount}, tag, nil
}

// listAPIOrgMembers is GET /api/v1/organizations/{id}/members, a page at
// a time.
func (h *Handlers) listAPIOrgMembers(c echo.Context) error {
	u, _ := currentUser(c)
	id, err := pathID(c, "id", errOrgNotFound)
	if err != nil {
		return err
	}
	p, err := apiPageOf(c)
	if err != nil {
		return err
	}
	people, err := h.Orgs.Members(c.Request().Context(), u.ID, id)
	if err != nil {
		return apiOrgError(c, err)
	}
	page, next, err := pageInMemory(people, p, func(m orgs.Person) int64 { return m.UserID })
	if err != nil {
		return err
	}
	out := apiOrgMemberList{Members: make([]apiOrgMember, len(page)), Next: next}
	for i, m := range page {
		out.Members[i] = apiOrgMemberOf(m)
	}
	return c.JSON(http.StatusOK, out)
}

// showAPIOrgMember is GET /api/v1/organizations/{id}/members/{user_id},
// with the ETag of what a PATCH changes (orgs.MemberTag).
func (h *Handlers) showAPIOrgMember(c echo.Context) error {
	id, userID, err := apiOrgMemberParams(c)
	if err != nil {
		return err
	}
	return h.answerAPIOrgMember(c, id, userID)
}

// updateAPIOrgMember is PATCH /api/v1/organizations/{id}/members/{user_id}:
// the member's role, as the service allows the caller's role; with
// If-Match, only over that ETag (conditional).
func (h *Handlers) updateAPIOrgMember(c echo.Context) error {
	id, userID, err := apiOrgMemberParams(c)
	if err != nil {
		return err
	}
	var body struct {
		Role string `json:"role"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if err := h.Orgs.SetRole(c.Request().Context(), id, userID, orgs.Role(body.Role), actor(c)); err != nil {
		return apiOrgError(c, err)
	}
	return h.answerAPIOrgMember(c, id, userID)
}

// answerAPIOrgMember answers with member userID of organization id and
// their entity tag.
func (h *Handlers) answerAPIOrgMember(c echo.Context, id, userID int64) error {
	u, _ := currentUser(c)
	m, err := h.Orgs.Member(c.Request().Context(), u.ID, id, userID)
	if err != nil {
		return apiOrgError(c, err)
	}
	tag, err := orgs.MemberTag(m.UserID, m.Role)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", tag)
	return c.JSON(http.StatusOK, apiOrgMemberOf(m))
}

// removeAPIOrgMember is DELETE /api/v1/organizations/{id}/members/{user_id}:
// the member is removed, with their API keys in the organization; the
// caller's own id leaves it.
func (h *Handlers) removeAPIOrgMember(c echo.Context) error {
	id, userID, err := apiOrgMemberParams(c)
	if err != nil {
		return err
	}
	if err := h.Orgs.Remove(c.Request().Context(), id, userID, actor(c)); err != nil {
		return apiOrgError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

// listAPIOrgInvitations is GET /api/v1/organizations/{id}/invitations:
// the latest, newest first, a page at a time.
func (h *Handlers) listAPIOrgInvitations(c echo.Context) error {
	u, _ := currentUser(c)
	id, err := pathID(c, "id", errOrgNotFound)
	if err != nil {
		return err
	}
	p, err := apiPageOf(c)
	if err != nil {
		return err
	}
	list, err := h.Orgs.Invitations(c.Request().Context(), u.ID, id)
	if err != nil {
		return apiOrgError(c, err)
	}
	page, next, err := pageInMemory(list, p, func(inv orgs.Invitation) int64 { return inv.ID })
	if err != nil {
		return err
	}
	out := apiOrgInvitationList{Invitations: make([]apiOrgInvitation, len(page)), Next: next}
	for i, inv := range page {
		out.Invitations[i] = apiOrgInvitationOf(inv)
	}
	return c.JSON(http.StatusOK, out)
}

// createAPIOrgInvitation is POST /api/v1/organizations/{id}/invitations:
// the address is mailed the link, in the caller's language.
func (h *Handlers) createAPIOrgInvitation(c echo.Context) error {
	u, _ := currentUser(c)
	id, err := pathID(c, "id", errOrgNotFound)
	if err != nil {
		return err
	}
	var body struct {
		Email string `json:"email"`
		Role  string `json:"role"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	inv, err := h.Orgs.Invite(ctx, id, body.Email, orgs.Role(body.Role), locale.Lang(ctx), actor(c))
	if err != nil {
		return apiOrgError(c, err)
	}
	made, err := h.Orgs.Invitation(ctx, u.ID, id, inv.ID)
	if err != nil {
		return apiOrgError(c, err)
	}
	return createdOnce(c, apiOrgPath(id)+"/invitations/"+strconv.FormatInt(inv.ID, 10), apiOrgInvitationOf(made))
}

// showAPIOrgInvitation is
// GET /api/v1/organizations/{id}/invitations/{invitation_id}.
func (h *Handlers) showAPIOrgInvitation(c echo.Context) error {
	u, _ := currentUser(c)
	id, invID, err := apiOrgInvitationParams(c)
	if err != nil {
		return err
	}
	inv, err := h.Orgs.Invitation(c.Request().Context(), u.ID, id, invID)
	if err != nil {
		return apiOrgError(c, err)
	}
	return c.JSON(http.StatusOK, apiOrgInvitationOf(inv))
}

// revokeAPIOrgInvitation is
// DELETE /api/v1/organizations/{id}/invitations/{invitation_id}: its link
// stops working. The invitation as it is now.
func (h *Handlers) revokeAPIOrgInvitation(c echo.Context) error {
	u, _ := currentUser(c)
	id, invID, err := apiOrgInvitationParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := h.Orgs.RevokeInvitation(ctx, id, invID, actor(c)); err != nil {
		return apiOrgError(c, err)
	}
	inv, err := h.Orgs.Invitation(ctx, u.ID, id, invID)
	if err != nil {
		return apiOrgError(c, err)
	}
	return c.JSON(http.StatusOK, apiOrgInvitationOf(inv))
}

// errOrgNotFound is an organization the caller is not a member of.
var errOrgNotFound = echo.NewHTTPError(http.StatusNotFound, orgs.ErrNotFound.Error())

// apiOrgConflicts are the codes of the changes the organization's state
// refuses (409), for programs to tell them apart.
var apiOrgConflicts = map[error]string{
	orgs.ErrLastOwner:            "last_owner",
	orgs.ErrPersonalOwner:        "personal_owner",
	orgs.ErrInvitationNotPending: "invitation_not_pending",
	orgs.ErrPersonalDelete:       "personal_organization",
	orgs.ErrHasClusters:          "has_clusters",
	orgs.ErrHasPendingOrder:      "has_pending_order",
}

// apiOrgError answers an organization service's error: 404 for what the
// caller cannot see, 409 with its code for what would leave the
// organization without an owner or changes an invitation no longer
// pending. ErrForbidden (403), field errors (422) and a stale If-Match
// (412) are the error handler's.
func apiOrgError(c echo.Context, err error) error {
	for known, code := range apiOrgConflicts {
		if errors.Is(err, known) {
			return c.JSON(http.StatusConflict, apiError{Error: apiErrorBody{Code: code, Message: locale.T(c.Request().Context(), known.Error())}})
		}
	}
	for _, notFound := range []error{orgs.ErrNotFound, orgs.ErrMemberNotFound, orgs.ErrInvitationNotFound} {
		if errors.Is(err, notFound) {
			return echo.NewHTTPError(http.StatusNotFound, notFound.Error())
		}
	}
	return err
}

// apiOrgMemberParams are the path's organization ({id}) and member
// ({user_id}).
func apiOrgMemberParams(c echo.Context) (id, userID int64, err error) {
	if id, err = pathID(c, "id", errOrgNotFound); err != nil {
		return 0, 0, err
	}
	userID, err = pathID(c, "user_id", echo.NewHTTPError(http.StatusNotFound, orgs.ErrMemberNotFound.Error()))
	return id, userID, err
}

// apiOrgInvitationParams are the path's organization ({id}) and
// invitation ({invitation_id}).
func apiOrgInvitationParams(c echo.Context) (id, invID int64, err error) {
	if id, err = pathID(c, "id", errOrgNotFound); err != nil {
		return 0, 0, err
	}
	invID, err = pathID(c, "invitation_id", echo.NewHTTPError(http.StatusNotFound, orgs.ErrInvitationNotFound.Error()))
	return id, invID, err
}

func apiOrgPath(id int64) string { return fmt.Sprintf("/api/v1/organizations/%d", id) }
