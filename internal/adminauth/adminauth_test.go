package adminauth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/etag"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// createUser makes a verified account with the given role and password.
func createUser(t *testing.T, pool *pgxpool.Pool, email, role, password string) queries.User {
	t.Helper()
	hash, err := passwords.Hash(password)
	require.NoError(t, err)
	u, err := queries.New(pool).UserCreate(context.Background(), queries.UserCreateParams{
		Email: email, Name: "Name of " + email, Role: role,
		PasswordHash:    pgtype.Text{String: hash, Valid: true},
		EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
	})
	require.NoError(t, err)
	return u
}

// TestLockActiveAdmin: an active admin passes; an account that is not an
// admin, a demoted or disabled admin and no account at all are refused.
func TestLockActiveAdmin(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	q := queries.New(pool)
	admin := createUser(t, pool, "admin@example.com", adminauth.RoleAdmin, "admin password 1")
	user := createUser(t, pool, "user@example.com", adminauth.RoleUser, "user password 1")
	demoted := createUser(t, pool, "demoted@example.com", adminauth.RoleAdmin, "demoted password 1")
	require.NoError(t, q.AdminUserSetRole(ctx, queries.AdminUserSetRoleParams{ID: demoted.ID, Role: adminauth.RoleUser}))
	disabled := createUser(t, pool, "disabled@example.com", adminauth.RoleAdmin, "disabled password 1")
	require.NoError(t, q.AdminUserDisable(ctx, disabled.ID))

	lock := func(id int64) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return adminauth.LockActiveAdmin(ctx, queries.New(tx), id)
		})
	}
	require.NoError(t, lock(admin.ID))
	for name, id := range map[string]int64{"user": user.ID, "demoted": demoted.ID, "disabled": disabled.ID, "none": admin.ID + 1000} {
		require.ErrorIs(t, lock(id), adminauth.ErrNotAdmin, name)
	}
}

// TestConfirmPasswordLimit: ReauthPerAdmin wrong passwords in its window
// and even the right one is refused until RetryAfter; a success then
// starts the count again.
func TestConfirmPasswordLimit(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	admin := createUser(t, pool, "admin@example.com", adminauth.RoleAdmin, "admin password 1")

	for range adminauth.ReauthPerAdmin.Limit {
		require.ErrorIs(t, adminauth.ConfirmPassword(ctx, pool, admin.ID, "guess", now), adminauth.ErrWrongPassword)
	}
	var limited *adminauth.LimitedError
	require.ErrorAs(t, adminauth.ConfirmPassword(ctx, pool, admin.ID, "admin password 1", now), &limited)
	require.Positive(t, limited.RetryAfter)

	now = now.Add(limited.RetryAfter)
	require.NoError(t, adminauth.ConfirmPassword(ctx, pool, admin.ID, "admin password 1", now))
	for range adminauth.ReauthPerAdmin.Limit - 1 {
		require.ErrorIs(t, adminauth.ConfirmPassword(ctx, pool, admin.ID, "guess", now), adminauth.ErrWrongPassword)
	}
	require.NoError(t, adminauth.ConfirmPassword(ctx, pool, admin.ID, "admin password 1", now),
		"the success reset the count")

	require.ErrorIs(t, adminauth.ConfirmPassword(ctx, pool, admin.ID+1000, "admin password 1", now), adminauth.ErrNotAdmin)
}

// TestSaveSettings: a change that needs confirming runs only with the
// admin's password (or a fresh sign-in, for an admin without one), and
// one that does not runs without; either way only while the admin is an
// active admin, with save's writes in the transaction.
func TestSaveSettings(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	admin := createUser(t, pool, "admin@example.com", adminauth.RoleAdmin, "admin password 1")
	user := createUser(t, pool, "user@example.com", adminauth.RoleUser, "user password 1")
	passwordless, err := queries.New(pool).UserCreate(ctx, queries.UserCreateParams{
		Email: "sso@example.com", Name: "SSO", Role: adminauth.RoleAdmin,
		EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
	})
	require.NoError(t, err)
	errRequired := errors.New("ErrTestPasswordRequired")

	// save writes a setting, so that a rolled back transaction shows.
	saves := 0
	save := func(q *queries.Queries) error {
		saves++
		return q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: "adminauth-test", Value: []byte(`{}`)})
	}
	stored := func() bool {
		_, err := queries.New(pool).SettingGet(ctx, "adminauth-test")
		if errors.Is(err, pgx.ErrNoRows) {
			return false
		}
		require.NoError(t, err)
		return true
	}
	fresh := adminauth.WithFreshSignIn(ctx, passwordless.ID, time.Now().Add(-time.Minute))

	for _, tt := range []struct {
		name    string
		ctx     context.Context
		adminID int64
		confirm adminauth.Confirm
		want    error
	}{
		{"no password", ctx, admin.ID, adminauth.Confirm{Needed: true, Required: errRequired}, errRequired},
		{"no password, no error named", ctx, admin.ID, adminauth.Confirm{Needed: true}, adminauth.ErrWrongPassword},
		{"wrong password", ctx, admin.ID, adminauth.Confirm{Needed: true, Password: "guess", Required: errRequired}, adminauth.ErrWrongPassword},
		{"not an admin", ctx, user.ID, adminauth.Confirm{}, adminauth.ErrNotAdmin},
		{"not an admin, confirmed", ctx, user.ID, adminauth.Confirm{Needed: true, Password: "user password 1", Required: errRequired}, adminauth.ErrNotAdmin},
		{"another admin's fresh sign-in", fresh, admin.ID, adminauth.Confirm{Needed: true, Required: errRequired}, adminauth.ErrWrongPassword},
	} {
		require.ErrorIs(t, adminauth.SaveSettings(tt.ctx, pool, tt.adminID, "adminauth-test", tt.confirm, save), tt.want, tt.name)
		require.Zero(t, saves, tt.name)
		require.False(t, stored(), tt.name)
	}

	for _, tt := range []struct {
		name    string
		ctx     context.Context
		adminID int64
		confirm adminauth.Confirm
	}{
		{"nothing to confirm", ctx, admin.ID, adminauth.Confirm{Password: "guess"}},
		{"password", ctx, admin.ID, adminauth.Confirm{Needed: true, Password: "admin password 1", Required: errRequired}},
		{"fresh sign-in", fresh, passwordless.ID, adminauth.Confirm{Needed: true, Required: errRequired}},
	} {
		saves = 0
		require.NoError(t, adminauth.SaveSettings(tt.ctx, pool, tt.adminID, "adminauth-test", tt.confirm, save), tt.name)
		require.Equal(t, 1, saves, tt.name)
	}
	require.True(t, stored())

	errSave := errors.New("save failed")
	_, err = pool.Exec(ctx, "DELETE FROM settings WHERE key = 'adminauth-test'")
	require.NoError(t, err)
	err = adminauth.SaveSettings(ctx, pool, admin.ID, "adminauth-test", adminauth.Confirm{}, func(q *queries.Queries) error {
		require.NoError(t, save(q))
		return errSave
	})
	require.ErrorIs(t, err, errSave)
	require.False(t, stored(), "a failed save writes nothing")
}

// TestSaveSettingsIfMatch: a save whose If-Match names the group's tag as
// it is under the lock runs; one read before another save is refused
// (etag.ErrPreconditionFailed) and writes nothing. The tag changes with
// the stored row, and a group never saved has one.
func TestSaveSettingsIfMatch(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	admin := createUser(t, pool, "admin@example.com", adminauth.RoleAdmin, "admin password 1")
	const key = "adminauth-etag-test"
	tag := func() string {
		t.Helper()
		s, err := adminauth.SettingsTag(ctx, queries.New(pool), key)
		require.NoError(t, err)
		return s
	}
	write := func(v string) func(q *queries.Queries) error {
		return func(q *queries.Queries) error {
			return q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: key, Value: []byte(v)})
		}
	}
	ifMatch := func(want string) context.Context {
		return etag.WithMatch(ctx, func(got string) bool { return got == want })
	}

	never := tag()
	require.NotEmpty(t, never)
	require.NoError(t, adminauth.SaveSettings(ifMatch(never), pool, admin.ID, key, adminauth.Confirm{}, write(`{"v": 1}`)))
	first := tag()
	require.NotEqual(t, never, first)

	// Read at first; another admin saves; the save made over the first
	// state is refused.
	require.NoError(t, adminauth.SaveSettings(ctx, pool, admin.ID, key, adminauth.Confirm{}, write(`{"v": 2}`)))
	second := tag()
	require.NotEqual(t, first, second)
	err := adminauth.SaveSettings(ifMatch(first), pool, admin.ID, key, adminauth.Confirm{}, write(`{"v": 3}`))
	require.ErrorIs(t, err, etag.ErrPreconditionFailed)
	require.Equal(t, second, tag(), "a refused save writes nothing")

	require.NoError(t, adminauth.SaveSettings(ifMatch(second), pool, admin.ID, key, adminauth.Confirm{}, write(`{"v": 3}`)))
	row, err := queries.New(pool).SettingGet(ctx, key)
	require.NoError(t, err)
	require.JSONEq(t, `{"v": 3}`, string(row.Value))
}
