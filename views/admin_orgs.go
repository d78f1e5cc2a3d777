package views

import (
	"fmt"

	"github.com/a-h/templ"

	"github.com/kubebyon/kubebyon/internal/adminorgs"
	"github.com/kubebyon/kubebyon/internal/orgs"
)

// AdminOrgList is one page of the admins' organization list.
type AdminOrgList struct {
	Query string
	Orgs  []adminorgs.Org
	// NextURL is the next page, FirstURL the first one; empty when there
	// is none to go to.
	NextURL  string
	FirstURL string
}

// AdminOrgDetail is an organization's admin page: the organization with
// its members, invitations and clusters, its plan and subscription with
// the forms that change it (Sub), and what it uses of its plan's limits.
type AdminOrgDetail struct {
	adminorgs.Detail
	Sub AdminSubscription
	// Limits are its usage against each limit of its plan; Ingress whether
	// the plan allows managed ingress.
	Limits  []BillingLimit
	Ingress bool
}

// adminOrgURL is the admin page of the organization with id.
func adminOrgURL(id int64) templ.SafeURL {
	return templ.SafeURL(fmt.Sprintf("/admin/organizations/%d", id))
}

// adminOrgKindMsg is the message ID of an organization's kind.
func adminOrgKindMsg(k adminorgs.Kind) string {
	if k == adminorgs.Personal {
		return "AdminOrgKindPersonal"
	}
	return "AdminOrgKindTeam"
}

// adminOrgRoleMsg is the message ID of a member's role.
func adminOrgRoleMsg(r orgs.Role) string {
	switch r {
	case orgs.Owner:
		return "AdminOrgRoleOwner"
	case orgs.Admin:
		return "AdminOrgRoleAdmin"
	case orgs.Member:
		return "AdminOrgRoleMember"
	}
	return "AdminOrgRoleViewer"
}

// adminOrgInvitationStateMsg is the message ID of an invitation's state.
func adminOrgInvitationStateMsg(state string) string {
	switch state {
	case orgs.InvitationAccepted:
		return "AdminOrgInvitationAccepted"
	case orgs.InvitationExpired:
		return "AdminOrgInvitationExpired"
	case orgs.InvitationRevoked:
		return "AdminOrgInvitationRevoked"
	}
	return "AdminOrgInvitationPending"
}
