package orgs_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/orgs"
)

// TestAllows is the documented role table.
func TestAllows(t *testing.T) {
	t.Parallel()
	table := map[orgs.Role]map[orgs.Permission]bool{
		orgs.Owner: {
			orgs.Read: true, orgs.Operate: true, orgs.ManageMembers: true, orgs.ManageOwners: true, orgs.Rename: true,
			orgs.ViewerKubeconfig: true, orgs.Billing: true, orgs.DeleteOrganization: true, orgs.ManageWebhooks: true,
		},
		orgs.Admin:  {orgs.Read: true, orgs.Operate: true, orgs.ManageMembers: true, orgs.Rename: true, orgs.ManageWebhooks: true},
		orgs.Member: {orgs.Read: true, orgs.Operate: true},
		orgs.Viewer: {orgs.Read: true},
		"root":      {},
	}
	perms := []orgs.Permission{
		orgs.Read, orgs.Operate, orgs.ManageMembers, orgs.ManageOwners, orgs.Rename, orgs.ViewerKubeconfig, orgs.Billing, orgs.DeleteOrganization,
		orgs.ManageWebhooks,
	}
	for role, want := range table {
		for _, p := range perms {
			require.Equal(t, want[p], orgs.Allows(role, p), "%s %s", role, p)
		}
	}
	for _, tt := range []struct {
		role   orgs.Role
		viewer bool
		want   string
	}{
		{orgs.Owner, false, "cluster-admin"}, {orgs.Admin, false, "cluster-admin"}, {orgs.Member, false, "cluster-admin"},
		{orgs.Viewer, false, ""}, {orgs.Viewer, true, "view"}, {"root", true, ""},
	} {
		require.Equal(t, tt.want, orgs.KubernetesAccess(tt.role, tt.viewer), "%s %t", tt.role, tt.viewer)
	}
}

// TestActingRoles: the roles a query matches for a permission are those
// that allow it, and none when the cap (a read key's Viewer) does not.
func TestActingRoles(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cap  orgs.Role
		p    orgs.Permission
		want []string
	}{
		{"", orgs.Read, []string{"owner", "admin", "member", "viewer"}},
		{"", orgs.Operate, []string{"owner", "admin", "member"}},
		{orgs.Owner, orgs.Billing, []string{"owner"}},
		{orgs.Admin, orgs.ManageMembers, []string{"owner", "admin"}},
		{orgs.Viewer, orgs.Read, []string{"owner", "admin", "member", "viewer"}},
		{orgs.Viewer, orgs.Operate, []string{}},
		{orgs.Member, orgs.Billing, []string{}},
		{"", orgs.ManageWebhooks, []string{"owner", "admin"}},
	} {
		a := orgs.Acting{OrgID: 1, UserID: 2, Cap: tt.cap}
		require.Equal(t, tt.want, a.Roles(tt.p), "%q %s", tt.cap, tt.p)
		require.Equal(t, len(tt.want) > 0, a.May(tt.p), "%q %s", tt.cap, tt.p)
	}
}
