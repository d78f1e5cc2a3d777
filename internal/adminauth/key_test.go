package adminauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestConfirmWithAdminKey: a request made with an admin's admin key needs
// no password, tries none (the attempts are not counted) and still runs
// only while the admin is an active admin; another admin's key confirms
// nothing.
func TestConfirmWithAdminKey(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	admin := createUser(t, pool, "admin@example.com", adminauth.RoleAdmin, "admin password 1")
	other := createUser(t, pool, "other@example.com", adminauth.RoleAdmin, "other password 1")
	keyed := adminauth.WithAdminKey(ctx, admin.ID)

	require.True(t, adminauth.ConfirmationGiven(keyed, ""))
	for range adminauth.ReauthPerAdmin.Limit + 1 {
		require.NoError(t, adminauth.ConfirmPassword(keyed, pool, admin.ID, "", now))
	}
	require.NoError(t, adminauth.ConfirmPassword(ctx, pool, admin.ID, "admin password 1", now),
		"the key's confirmations counted no attempts")
	require.ErrorIs(t, adminauth.ConfirmPassword(keyed, pool, other.ID, "", now), adminauth.ErrWrongPassword)

	saves := 0
	save := func(*queries.Queries) error { saves++; return nil }
	confirm := adminauth.Confirm{Needed: true}
	require.NoError(t, adminauth.SaveSettings(keyed, pool, admin.ID, confirm, save))
	require.Equal(t, 1, saves)
	require.ErrorIs(t, adminauth.SaveSettings(keyed, pool, other.ID, confirm, save), adminauth.ErrWrongPassword)

	require.NoError(t, queries.New(pool).AdminUserSetRole(ctx, queries.AdminUserSetRoleParams{ID: admin.ID, Role: adminauth.RoleUser}))
	require.ErrorIs(t, adminauth.SaveSettings(keyed, pool, admin.ID, confirm, save), adminauth.ErrNotAdmin)
	require.Equal(t, 1, saves)
}
