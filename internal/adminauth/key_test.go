package adminauth_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestSaveSettingsWithAdminKey: settings saved with an admin's admin key
// need no password, and still only while the admin is an active admin;
// another admin's key confirms nothing.
func TestSaveSettingsWithAdminKey(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	admin := createUser(t, pool, "admin@example.com", adminauth.RoleAdmin, "admin password 1")
	other := createUser(t, pool, "other@example.com", adminauth.RoleAdmin, "other password 1")
	keyed := adminauth.WithAdminKey(ctx, admin.ID)

	saves := 0
	save := func(*queries.Queries) error { saves++; return nil }
	confirm := adminauth.Confirm{Needed: true}
	require.NoError(t, adminauth.SaveSettings(keyed, pool, admin.ID, "adminauth-test", confirm, save))
	require.Equal(t, 1, saves)
	require.ErrorIs(t, adminauth.SaveSettings(keyed, pool, other.ID, "adminauth-test", confirm, save), adminauth.ErrWrongPassword)

	require.NoError(t, queries.New(pool).AdminUserSetRole(ctx, queries.AdminUserSetRoleParams{ID: admin.ID, Role: adminauth.RoleUser}))
	require.ErrorIs(t, adminauth.SaveSettings(keyed, pool, admin.ID, "adminauth-test", confirm, save), adminauth.ErrNotAdmin)
	require.Equal(t, 1, saves)
}
