package adminauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestConfirmWithFreshSignIn: an admin without a password confirms with a
// sign-in with a provider made within FreshSignInTTL, their own; an admin
// with a password still confirms with it.
func TestConfirmWithFreshSignIn(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	now := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	withPassword := createUser(t, pool, "with-password@example.com", "admin", "admin password 1")
	passwordless, err := queries.New(pool).UserCreate(context.Background(), queries.UserCreateParams{
		Email: "sso@example.com", Name: "SSO", Role: "admin",
		EmailVerifiedAt: pgtype.Timestamptz{Time: now, Valid: true},
	})
	require.NoError(t, err)

	tests := []struct {
		name     string
		admin    int64
		freshFor int64 // the admin whose fresh sign-in the request carries (0: none)
		age      time.Duration
		password string
		ok       bool
	}{
		{name: "none", admin: passwordless.ID},
		{name: "fresh", admin: passwordless.ID, freshFor: passwordless.ID, age: time.Minute, ok: true},
		{name: "almost stale", admin: passwordless.ID, freshFor: passwordless.ID, age: adminauth.FreshSignInTTL - time.Second, ok: true},
		{name: "stale", admin: passwordless.ID, freshFor: passwordless.ID, age: adminauth.FreshSignInTTL},
		{name: "from the future", admin: passwordless.ID, freshFor: passwordless.ID, age: -time.Minute},
		{name: "another admin's", admin: passwordless.ID, freshFor: withPassword.ID, age: time.Minute},
		{name: "password instead", admin: withPassword.ID, freshFor: withPassword.ID, age: time.Minute},
		{name: "password", admin: withPassword.ID, password: "admin password 1", ok: true},
	}
	for _, tt := range tests {
		ctx := context.Background()
		if tt.freshFor != 0 {
			ctx = adminauth.WithFreshSignIn(ctx, tt.freshFor, now.Add(-tt.age))
		}
		err := adminauth.ConfirmPassword(ctx, pool, tt.admin, tt.password, now)
		if tt.ok {
			require.NoError(t, err, tt.name)
		} else {
			require.ErrorIs(t, err, adminauth.ErrWrongPassword, tt.name)
		}
	}
}

// TestConfirmationGiven: a form brings a confirmation when it has a
// password or the request a fresh sign-in.
func TestConfirmationGiven(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	require.False(t, adminauth.ConfirmationGiven(ctx, ""))
	require.True(t, adminauth.ConfirmationGiven(ctx, "p"))
	require.True(t, adminauth.ConfirmationGiven(adminauth.WithFreshSignIn(ctx, 1, time.Now().Add(-time.Minute)), ""))
	require.False(t, adminauth.ConfirmationGiven(adminauth.WithFreshSignIn(ctx, 1, time.Now().Add(-time.Hour)), ""))
	require.True(t, adminauth.ConfirmationGiven(adminauth.WithAdminKey(ctx, 1), ""))
}

// TestConfirmWithAdminKey: a request made with an admin key of the acting
// admin is confirmed without a password, past the limit of password
// tries and without counting against it; another admin's key confirms
// nothing.
func TestConfirmWithAdminKey(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	now := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	admin := createUser(t, pool, "keyed@example.com", adminauth.RoleAdmin, "admin password 1")
	other := createUser(t, pool, "other@example.com", adminauth.RoleAdmin, "admin password 2")
	keyed := adminauth.WithAdminKey(context.Background(), admin.ID)

	require.ErrorIs(t, adminauth.ConfirmPassword(keyed, pool, other.ID, "", now), adminauth.ErrWrongPassword)
	for range adminauth.ReauthPerAdmin.Limit {
		require.ErrorIs(t, adminauth.ConfirmPassword(context.Background(), pool, admin.ID, "guess", now), adminauth.ErrWrongPassword)
	}
	for range adminauth.ReauthPerAdmin.Limit + 1 {
		require.NoError(t, adminauth.ConfirmPassword(keyed, pool, admin.ID, "", now))
	}
	var limited *adminauth.LimitedError
	require.ErrorAs(t, adminauth.ConfirmPassword(context.Background(), pool, admin.ID, "admin password 1", now), &limited,
		"the key neither reset nor used the count of password tries")
}
