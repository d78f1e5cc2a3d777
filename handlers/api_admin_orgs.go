package handlers

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/adminorgs"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/orgs"
)

// The admin API's organizations (GET /api/v1/admin/organizations...) and
// their subscriptions (/api/v1/admin/organizations/:id/subscription...):
// what admin_orgs.go shows and does in the back office, with the same
// services; an account's organizations are in its GET
// /api/v1/admin/users/{id}.

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
	// ClosedAt is when a team deleted with orders was closed, its row
	// kept for them; null for one in use.
	ClosedAt *time.Time `json:"closed_at"`
}

func apiAdminOrgOf(o adminorgs.Org) apiAdminOrg {
	out := apiAdminOrg{ID: o.ID, Name: o.Name, Kind: string(o.Kind), MemberCount: o.MemberCount, CreatedAt: o.CreatedAt.UTC()}
	if o.PersonalUserID != 0 {
		out.PersonalUserID, out.PersonalUserEmail = &o.PersonalUserID, &o.PersonalEmail
	}
	if !o.ClosedAt.IsZero() {
		closed := o.ClosedAt.UTC()
		out.ClosedAt = &closed
	}
	return out
}

// apiAdminOrgList is one page of organizations, newest first (api_page.go).
type apiAdminOrgList struct {
	Organizations []apiAdminOrg `json:"organizations"`
	Next          string        `json:"next,omitempty"`
}

// apiAdminOrgDetail is one organization with its members and
// invitations, its plan, subscription and usage, and its clusters.
type apiAdminOrgDetail struct {
	apiAdminOrg
	// CreatedByID and CreatedByEmail are who made it; null for an account
	// deleted since.
	CreatedByID      *int64                  `json:"created_by_id"`
	CreatedByEmail   *string                 `json:"created_by_email"`
	ViewerKubeconfig bool                    `json:"viewer_kubeconfig"`
	Members          []apiAdminOrgMember     `json:"members"`
	Invitations      []apiAdminOrgInvitation `json:"invitations"`
	// Plan is its subscription's, with its limits; Usage what it uses of
	// them.
	Plan         apiPlan              `json:"plan"`
	Subscription apiAdminSubscription `json:"subscription"`
	Usage        apiUsage             `json:"usage"`
	// Clusters are its newest live clusters (up to adminorgs.Clusters),
	// newest first; ClusterCount is how many live ones it has.
	Clusters     []apiAdminOrgCluster `json:"clusters"`
	ClusterCount int64                `json:"cluster_count"`
}

// apiAdminOrgCluster is a live cluster of an organization.
type apiAdminOrgCluster struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Nodes  int64  `json:"nodes"`
	// OwnerID made it; OwnerEmail is null for an account deleted since.
	OwnerID    int64     `json:"owner_id"`
	OwnerEmail *string   `json:"owner_email"`
	CreatedAt  time.Time `json:"created_at"`
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

func apiAdminOrgDetailOf(d adminorgs.Detail, use billing.Usage) apiAdminOrgDetail {
	out := apiAdminOrgDetail{
		apiAdminOrg: apiAdminOrgOf(d.Org), ViewerKubeconfig: d.ViewerKubeconfig,
		Members:      make([]apiAdminOrgMember, len(d.Members)),
		Invitations:  make([]apiAdminOrgInvitation, len(d.Invitations)),
		Plan:         apiPlanOf(use.Plan),
		Subscription: apiAdminSubscriptionOf(use.Subscription),
		Usage:        apiUsage{Clusters: use.Clusters, MostNodesInACluster: use.MostNodes, MostHostnamesInACluster: use.MostHostnames},
		Clusters:     make([]apiAdminOrgCluster, len(d.Clusters)),
		ClusterCount: d.ClusterCount,
	}
	for i, c := range d.Clusters {
		out.Clusters[i] = apiAdminOrgCluster{
			ID: c.ID, Name: c.Name, Status: c.Status, Nodes: c.Nodes, OwnerID: c.OwnerID, CreatedAt: c.CreatedAt.UTC(),
		}
		if c.OwnerEmail != "" {
			out.Clusters[i].OwnerEmail = &c.OwnerEmail
		}
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
	ctx := c.Request().Context()
	d, err := h.AdminOrgs.Get(ctx, id)
	if errors.Is(err, adminorgs.ErrNotFound) {
		return errAdminOrgNotFound
	}
	if err != nil {
		return err
	}
	use, err := h.Billing.UsageOfOrg(ctx, id)
	if err != nil {
		return apiAdminOrgError(err)
	}
	return c.JSON(http.StatusOK, apiAdminOrgDetailOf(d, use))
}

// apiAdminOrgError is apiAdminBillingError for the routes of an
// organization: one that does not exist (or an admin no longer one) is
// errAdminOrgNotFound.
func apiAdminOrgError(err error) error {
	if errors.Is(err, orgs.ErrNotFound) || errors.Is(err, adminauth.ErrNotAdmin) {
		return errAdminOrgNotFound
	}
	return apiAdminBillingError(err)
}

// showAPIAdminOrgSubscription is GET
// /api/v1/admin/organizations/:id/subscription.
func (h *Handlers) showAPIAdminOrgSubscription(c echo.Context) error {
	id, err := pathID(c, "id", errAdminOrgNotFound)
	if err != nil {
		return err
	}
	return h.answerAPIAdminOrgSubscription(c, id)
}

// answerAPIAdminOrgSubscription is answerAPIAdminSubscription, with the
// organization routes' 404.
func (h *Handlers) answerAPIAdminOrgSubscription(c echo.Context, id int64) error {
	if err := h.answerAPIAdminSubscription(c, id); err != nil {
		return apiAdminOrgError(err)
	}
	return nil
}

// changeAPIAdminOrgSubscription is POST
// /api/v1/admin/organizations/:id/subscription/plan, /extend or /cancel:
// a change of the path's organization's subscription, the same as a
// user's (api_admin_billing.go) through the same billing service
// (audited there), answered with the subscription.
func (h *Handlers) changeAPIAdminOrgSubscription(change apiAdminSubChange) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, "id", errAdminOrgNotFound)
		if err != nil {
			return err
		}
		body, run := change(c)
		return h.changeAPIAdmin(c, id, body, func(id int64) error { return apiAdminOrgError(run(id)) }, h.answerAPIAdminOrgSubscription)
	}
}
