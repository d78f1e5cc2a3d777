package handlers

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminorgs"
)

// The admin API's organizations (GET /api/v1/admin/organizations...):
// what admin_orgs.go shows in the back office, with the same service; an
// account's organizations are in its GET /api/v1/admin/users/{id}.

// errAdminOrgNotFound is an organization that does not exist.
var errAdminOrgNotFound = echo.NewHTTPError(http.StatusNotFound, "ErrAdminOrgNotFound")

// apiAdminOrg is an organization as the admin API lists it.
type apiAdminOrg struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	// Kind is personal or team (adminorgs.Kind).
	Kind string `json:"kind"`
	// PersonalUserID and PersonalUserEmail are the account whose personal
	// organization it is; null for a team's.
	PersonalUserID    *int64    `json:"personal_user_id"`
	PersonalUserEmail *string   `json:"personal_user_email"`
	MemberCount       int64     `json:"member_count"`
	CreatedAt         time.Time `json:"created_at"`
}

func apiAdminOrgOf(o adminorgs.Org) apiAdminOrg {
	out := apiAdminOrg{ID: o.ID, Name: o.Name, Kind: string(o.Kind), MemberCount: o.MemberCount, CreatedAt: o.CreatedAt.UTC()}
	if o.PersonalUserID != 0 {
		out.PersonalUserID, out.PersonalUserEmail = &o.PersonalUserID, &o.PersonalEmail
	}
	return out
}

// apiAdminOrgList is one page of organizations, newest first (api_page.go).
type apiAdminOrgList struct {
	Organizations []apiAdminOrg `json:"organizations"`
	Next          string        `json:"next,omitempty"`
}

// apiAdminOrgDetail is one organization with its members and invitations.
type apiAdminOrgDetail struct {
	apiAdminOrg
	// CreatedByID and CreatedByEmail are who made it; null for an account
	// deleted since.
	CreatedByID      *int64                  `json:"created_by_id"`
	CreatedByEmail   *string                 `json:"created_by_email"`
	ViewerKubeconfig bool                    `json:"viewer_kubeconfig"`
	Members          []apiAdminOrgMember     `json:"members"`
	Invitations      []apiAdminOrgInvitation `json:"invitations"`
}

type apiAdminOrgMember struct {
	UserID   int64     `json:"user_id"`
	Email    string    `json:"email"`
	Name     string    `json:"name"`
	Role     string    `json:"role"`
	JoinedAt time.Time `json:"joined_at"`
}

type apiAdminOrgInvitation struct {
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

func apiAdminOrgDetailOf(d adminorgs.Detail) apiAdminOrgDetail {
	out := apiAdminOrgDetail{
		apiAdminOrg: apiAdminOrgOf(d.Org), ViewerKubeconfig: d.ViewerKubeconfig,
		Members:     make([]apiAdminOrgMember, len(d.Members)),
		Invitations: make([]apiAdminOrgInvitation, len(d.Invitations)),
	}
	if d.CreatedByID != 0 {
		out.CreatedByID, out.CreatedByEmail = &d.CreatedByID, &d.CreatedByEmail
	}
	for i, m := range d.Members {
		out.Members[i] = apiAdminOrgMember{UserID: m.UserID, Email: m.Email, Name: m.Name, Role: string(m.Role), JoinedAt: m.Since.UTC()}
	}
	for i, inv := range d.Invitations {
		out.Invitations[i] = apiAdminOrgInvitation{
			ID: inv.ID, Email: inv.Email, Role: string(inv.Role), State: inv.State,
			CreatedAt: inv.CreatedAt.UTC(), ExpiresAt: inv.ExpiresAt.UTC(),
			AcceptedAt: optionalTimeOf(inv.AcceptedAt), RevokedAt: optionalTimeOf(inv.RevokedAt),
		}
		if inv.InvitedByEmail != "" {
			out.Invitations[i].InvitedByEmail = &inv.InvitedByEmail
		}
	}
	return out
}

// apiAdminUserOrg is one of an account's organizations, with its role
// there, in the account's GET /api/v1/admin/users/{id}.
type apiAdminUserOrg struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	Kind        string    `json:"kind"`
	Role        string    `json:"role"`
	MemberCount int64     `json:"member_count"`
	JoinedAt    time.Time `json:"joined_at"`
}

func apiAdminUserOrgsOf(list []adminorgs.Membership) []apiAdminUserOrg {
	out := make([]apiAdminUserOrg, len(list))
	for i, m := range list {
		out[i] = apiAdminUserOrg{
			ID: m.ID, Name: m.Name, Kind: string(m.Kind), Role: string(m.Role), MemberCount: m.MemberCount, JoinedAt: m.Since.UTC(),
		}
	}
	return out
}

// optionalTimeOf is a time the zero of which is none, as the API shows
// it: in UTC, none is null.
func optionalTimeOf(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// listAPIAdminOrgs is GET /api/v1/admin/organizations: every
// organization, newest first, or those whose name or a member's email
// contains ?q=, a page at a time.
func (h *Handlers) listAPIAdminOrgs(c echo.Context) error {
	p, before, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	page, err := h.AdminOrgs.List(c.Request().Context(), strings.TrimSpace(c.QueryParam("q")), before, p.Limit)
	if err != nil {
		return err
	}
	out := apiAdminOrgList{Organizations: make([]apiAdminOrg, len(page.Orgs)), Next: idCursor(page.NextBefore)}
	for i, o := range page.Orgs {
		out.Organizations[i] = apiAdminOrgOf(o)
	}
	return c.JSON(http.StatusOK, out)
}

// showAPIAdminOrg is GET /api/v1/admin/organizations/:id.
func (h *Handlers) showAPIAdminOrg(c echo.Context) error {
	id, err := pathID(c, "id", errAdminOrgNotFound)
	if err != nil {
		return err
	}
	d, err := h.AdminOrgs.Get(c.Request().Context(), id)
	if errors.Is(err, adminorgs.ErrNotFound) {
		return errAdminOrgNotFound
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiAdminOrgDetailOf(d))
}
