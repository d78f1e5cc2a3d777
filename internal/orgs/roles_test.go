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
		orgs.Owner:  {orgs.Read: true, orgs.Operate: true, orgs.ManageMembers: true, orgs.ManageOwners: true, orgs.Billing: true, orgs.DeleteOrganization: true},
		orgs.Admin:  {orgs.Read: true, orgs.Operate: true, orgs.ManageMembers: true},
		orgs.Member: {orgs.Read: true, orgs.Operate: true},
		orgs.Viewer: {orgs.Read: true},
		"root":      {},
	}
	perms := []orgs.Permission{orgs.Read, orgs.Operate, orgs.ManageMembers, orgs.ManageOwners, orgs.Billing, orgs.DeleteOrganization}
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
