// Package orgs is organizations: who shares clusters, billing and
// notifications, and in which role. Every user has a personal
// organization, of which they are the owner (made with the account by the
// database, migration 054); a user may make more and be a member of
// others. The roles are fixed; Allows says what each may do, and every
// service checks it, in SQL where it reads (a non-member sees nothing).
package orgs

import "slices"

// Role is a member's role in an organization (organization_members.role).
type Role string

// The roles, from the most rights to the least.
const (
	// Owner: billing, members (owners too), whether viewers may download
	// a kubeconfig, deleting the organization, and all that Admin may.
	Owner Role = "owner"
	// Admin: clusters, members other than owners, the organization's
	// name.
	Admin Role = "admin"
	// Member: clusters, join tokens, node operations.
	Member Role = "member"
	// Viewer: reads; downloads a read-only kubeconfig only when the
	// organization allows it.
	Viewer Role = "viewer"
)

// Roles are the roles, from the most rights to the least.
var Roles = []Role{Owner, Admin, Member, Viewer}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool {
	switch r {
	case Owner, Admin, Member, Viewer:
		return true
	}
	return false
}

// Permission is something a role may do in its organization.
type Permission string

// The permissions.
const (
	// Read: the organization's clusters, nodes, events and metrics.
	Read Permission = "read"
	// Operate: create, change and delete clusters; join tokens; node
	// operations (cordon, drain, delete); managed ingress and host names.
	Operate Permission = "operate"
	// ManageMembers: invite, change the role of and remove members who
	// are not owners.
	ManageMembers Permission = "manage_members"
	// ManageOwners: make, demote and remove owners.
	ManageOwners Permission = "manage_owners"
	// Rename: change the organization's name.
	Rename Permission = "rename"
	// ViewerKubeconfig: let viewers download a read-only kubeconfig, or
	// stop them (organizations.viewer_kubeconfig).
	ViewerKubeconfig Permission = "viewer_kubeconfig"
	// Billing: the plan, orders and payment.
	Billing Permission = "billing"
	// DeleteOrganization: delete the organization (not a personal one).
	DeleteOrganization Permission = "delete_organization"
	// ManageWebhooks: add, test and remove the organization's webhook
	// channels, where its clusters' events go outside the platform: the
	// owners' and admins', who are told of the clusters' failures.
	ManageWebhooks Permission = "manage_webhooks"
)

// grants is the fixed table of what each role may do.
var grants = map[Role][]Permission{
	Owner:  {Read, Operate, ManageMembers, ManageOwners, Rename, ViewerKubeconfig, Billing, DeleteOrganization, ManageWebhooks},
	Admin:  {Read, Operate, ManageMembers, Rename, ManageWebhooks},
	Member: {Read, Operate},
	Viewer: {Read},
}

// Allows reports whether role r may do p.
func Allows(r Role, p Permission) bool {
	return slices.Contains(grants[r], p)
}

// allowing is the roles that may do p, as the queries match a member's
// role against (EXISTS over organization_members, in every query).
func allowing(p Permission) []string {
	out := make([]string, 0, len(Roles))
	for _, r := range Roles {
		if Allows(r, p) {
			out = append(out, string(r))
		}
	}
	return out
}

// KubernetesAccess is the access a member's own kubeconfig gives in the
// organization's virtual clusters, as the ClusterRole it is bound to
// (clusteraccess.Level): "cluster-admin" for owners, admins and members,
// "view" for viewers when the organization lets viewers download one
// (viewerKubeconfig), else "" (none).
func KubernetesAccess(r Role, viewerKubeconfig bool) string {
	switch {
	case Allows(r, Operate):
		return "cluster-admin"
	case r == Viewer && viewerKubeconfig:
		return "view"
	}
	return ""
}
