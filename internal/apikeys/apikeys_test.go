package apikeys_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/apikeys"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type testBundle struct {
	pool *pgxpool.Pool
	svc  *apikeys.Service
	now  time.Time
}

// setup gives a service on a database of the test's own, with a clock the
// test moves (b.now).
func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{pool: testenv.DB(t), now: time.Now().Truncate(time.Second)}
	b.svc = &apikeys.Service{Pool: b.pool, Now: func() time.Time { return b.now }}
	return b
}

// user makes an account, verified unless told otherwise.
func (b *testBundle) user(t *testing.T, email string, verified bool) queries.User {
	t.Helper()
	u, err := queries.New(b.pool).UserCreate(context.Background(), queries.UserCreateParams{
		Email: email, Name: "Name of " + email, Role: "user",
		EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: verified},
	})
	require.NoError(t, err)
	return u
}

func (b *testBundle) create(t *testing.T, u queries.User, expiry apikeys.Expiry) apikeys.Created {
	t.Helper()
	c, err := b.svc.Create(context.Background(), actingAs(t, b.svc.Pool, u.ID), "deploys", apikeys.ScopeWrite, expiry, audit.Actor{UserID: u.ID, Email: u.Email})
	require.NoError(t, err)
	return c
}

func (b *testBundle) auditCount(t *testing.T, action string, keyID int64) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM audit_events WHERE action = $1 AND target_type = 'api_key' AND target_id = $2",
		action, fmt.Sprint(keyID)).Scan(&n))
	return n
}

func TestCreateAndAuthenticate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u := b.user(t, "ada@example.com", true)

	c := b.create(t, u, apikeys.Expiry{Choice: apikeys.ExpiryNever})
	key, ok := apikeys.ParseBearer("Bearer " + c.Value)
	require.True(t, ok, "a new key has the shape the API accepts: %q", c.Value)
	require.Equal(t, c.Value, key)
	require.Equal(t, c.Value[:12], c.Key.Prefix)
	require.False(t, c.Key.ExpiresAt.Valid)
	require.Equal(t, 1, b.auditCount(t, "api_key.create", c.Key.ID))

	// Only a hash is stored: the value is nowhere in the row.
	var row string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT api_keys::text FROM api_keys WHERE id = $1", c.Key.ID).Scan(&row))
	require.NotContains(t, row, c.Value[13:])

	got, err := b.svc.Authenticate(ctx, c.Value, "192.0.2.1")
	require.NoError(t, err)
	require.Equal(t, u.ID, got.User.ID)
	require.Equal(t, apikeys.ScopeWrite, got.Scope)

	// Keys are random.
	other := b.create(t, u, apikeys.Expiry{Choice: apikeys.ExpiryNever})
	require.NotEqual(t, c.Value, other.Value)
	require.NotEqual(t, c.Key.Prefix, other.Key.Prefix)
}

func TestLastUsedIsWrittenAtMostOnceAMinute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u := b.user(t, "ada@example.com", true)
	c := b.create(t, u, apikeys.Expiry{Choice: apikeys.ExpiryNever})
	lastUsed := func() time.Time {
		k, err := b.svc.Get(ctx, u.ID, c.Key.ID)
		require.NoError(t, err)
		require.True(t, k.LastUsedAt.Valid)
		return k.LastUsedAt.Time
	}

	start := b.now
	_, err := b.svc.Authenticate(ctx, c.Value, "192.0.2.1")
	require.NoError(t, err)
	require.True(t, lastUsed().Equal(start))

	b.now = start.Add(59 * time.Second)
	_, err = b.svc.Authenticate(ctx, c.Value, "192.0.2.1")
	require.NoError(t, err)
	require.True(t, lastUsed().Equal(start), "not written again within a minute")

	b.now = start.Add(61 * time.Second)
	_, err = b.svc.Authenticate(ctx, c.Value, "192.0.2.1")
	require.NoError(t, err)
	require.True(t, lastUsed().Equal(b.now))
}

func TestAuthenticateRejects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u := b.user(t, "ada@example.com", true)
	good := b.create(t, u, apikeys.Expiry{Choice: apikeys.Expiry30Days})

	wrongSecret := good.Value[:13] + strings.Repeat("a", 32)
	if wrongSecret == good.Value {
		wrongSecret = good.Value[:13] + strings.Repeat("b", 32)
	}
	for name, key := range map[string]string{
		"empty":          "",
		"malformed":      "kbn_" + good.Value,
		"unknown id":     "kbn_aaaaaaaa_" + good.Value[13:],
		"wrong secret":   wrongSecret,
		"uppercase copy": strings.ToUpper(good.Value),
	} {
		_, err := b.svc.Authenticate(ctx, key, "192.0.2.1")
		require.ErrorIs(t, err, apikeys.ErrUnauthorized, name)
	}

	t.Run("expired", func(t *testing.T) {
		c := b.create(t, u, apikeys.Expiry{Choice: apikeys.Expiry30Days})
		require.True(t, c.Key.ExpiresAt.Time.Equal(b.now.AddDate(0, 0, 30)))
		svc := &apikeys.Service{Pool: b.pool, Now: func() time.Time { return c.Key.ExpiresAt.Time.Add(-time.Second) }}
		_, err := svc.Authenticate(ctx, c.Value, "192.0.2.1")
		require.NoError(t, err)
		svc.Now = func() time.Time { return c.Key.ExpiresAt.Time }
		_, err = svc.Authenticate(ctx, c.Value, "192.0.2.1")
		require.ErrorIs(t, err, apikeys.ErrUnauthorized)
		require.Equal(t, "expired", apikeys.Status(c.Key, c.Key.ExpiresAt.Time))
	})

	t.Run("disabled account", func(t *testing.T) {
		d := b.user(t, "disabled@example.com", true)
		c := b.create(t, d, apikeys.Expiry{Choice: apikeys.ExpiryNever})
		_, err := b.svc.Authenticate(ctx, c.Value, "192.0.2.1")
		require.NoError(t, err)
		_, err = b.pool.Exec(ctx, "UPDATE users SET disabled_at = now() WHERE id = $1", d.ID)
		require.NoError(t, err)
		_, err = b.svc.Authenticate(ctx, c.Value, "192.0.2.1")
		require.ErrorIs(t, err, apikeys.ErrUnauthorized)
	})

	t.Run("unverified account", func(t *testing.T) {
		v := b.user(t, "unverified@example.com", false)
		c := b.create(t, v, apikeys.Expiry{Choice: apikeys.ExpiryNever})
		_, err := b.svc.Authenticate(ctx, c.Value, "192.0.2.1")
		require.ErrorIs(t, err, apikeys.ErrUnauthorized)
	})

	// None of that touched the good key.
	_, err := b.svc.Authenticate(ctx, good.Value, "192.0.2.1")
	require.NoError(t, err)
}

func TestRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ada := b.user(t, "ada@example.com", true)
	eve := b.user(t, "eve@example.com", true)
	c := b.create(t, ada, apikeys.Expiry{Choice: apikeys.ExpiryNever})

	// Someone else's key is not found, and stays as it was.
	err := b.svc.Revoke(ctx, eve.ID, c.Key.ID, audit.Actor{UserID: eve.ID})
	require.ErrorIs(t, err, apikeys.ErrNotFound)
	_, err = b.svc.Get(ctx, eve.ID, c.Key.ID)
	require.ErrorIs(t, err, apikeys.ErrNotFound)
	require.ErrorIs(t, b.svc.Revoke(ctx, ada.ID, 1<<40, audit.Actor{UserID: ada.ID}), apikeys.ErrNotFound)
	_, err = b.svc.Authenticate(ctx, c.Value, "192.0.2.1")
	require.NoError(t, err)
	require.Zero(t, b.auditCount(t, "api_key.revoke", c.Key.ID))

	require.NoError(t, b.svc.Revoke(ctx, ada.ID, c.Key.ID, audit.Actor{UserID: ada.ID, Email: ada.Email}))
	_, err = b.svc.Authenticate(ctx, c.Value, "192.0.2.1")
	require.ErrorIs(t, err, apikeys.ErrUnauthorized)
	require.Equal(t, 1, b.auditCount(t, "api_key.revoke", c.Key.ID))

	// Again: nothing changes, nothing more is recorded.
	require.NoError(t, b.svc.Revoke(ctx, ada.ID, c.Key.ID, audit.Actor{UserID: ada.ID, Email: ada.Email}))
	require.Equal(t, 1, b.auditCount(t, "api_key.revoke", c.Key.ID))

	keys, err := b.svc.List(ctx, ada.ID)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.Equal(t, "revoked", apikeys.Status(keys[0], b.now))
	keys, err = b.svc.List(ctx, eve.ID)
	require.NoError(t, err)
	require.Empty(t, keys)
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u := b.user(t, "ada@example.com", true)
	today := b.now.UTC().Format(time.DateOnly)
	tomorrow := b.now.UTC().AddDate(0, 0, 1).Format(time.DateOnly)

	tests := []struct {
		name   string
		key    string
		expiry apikeys.Expiry
		want   apikeys.FieldErrors
	}{
		{"no name", "  ", apikeys.Expiry{Choice: apikeys.ExpiryNever}, apikeys.FieldErrors{"name": "ErrAPIKeyNameRequired"}},
		{"long name", strings.Repeat("é", 101), apikeys.Expiry{Choice: apikeys.ExpiryNever}, apikeys.FieldErrors{"name": "ErrAPIKeyNameTooLong"}},
		{"no expiry", "ci", apikeys.Expiry{}, apikeys.FieldErrors{"expiry": "ErrAPIKeyExpiryInvalid"}},
		{"unknown expiry", "ci", apikeys.Expiry{Choice: "7d"}, apikeys.FieldErrors{"expiry": "ErrAPIKeyExpiryInvalid"}},
		{"no date", "", apikeys.Expiry{Choice: apikeys.ExpiryOnDate}, apikeys.FieldErrors{"name": "ErrAPIKeyNameRequired", "expires_on": "ErrAPIKeyDateRequired"}},
		{"bad date", "ci", apikeys.Expiry{Choice: apikeys.ExpiryOnDate, Date: "31/12/2030"}, apikeys.FieldErrors{"expires_on": "ErrAPIKeyDateInvalid"}},
		{"today", "ci", apikeys.Expiry{Choice: apikeys.ExpiryOnDate, Date: today}, apikeys.FieldErrors{"expires_on": "ErrAPIKeyDatePast"}},
	}
	for _, tt := range tests {
		_, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), tt.key, apikeys.ScopeWrite, tt.expiry, audit.Actor{})
		var fe apikeys.FieldErrors
		require.ErrorAs(t, err, &fe, tt.name)
		require.Equal(t, tt.want, fe, tt.name)
	}
	keys, err := b.svc.List(ctx, u.ID)
	require.NoError(t, err)
	require.Empty(t, keys, "nothing is written for bad input")

	c, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), strings.Repeat("é", 100), apikeys.ScopeWrite, apikeys.Expiry{Choice: apikeys.ExpiryOnDate, Date: tomorrow}, audit.Actor{})
	require.NoError(t, err)
	require.Equal(t, tomorrow+"T00:00:00Z", c.Key.ExpiresAt.Time.UTC().Format(time.RFC3339))
	c, err = b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), " ci ", apikeys.ScopeWrite, apikeys.Expiry{Choice: apikeys.Expiry1Year, Date: "ignored"}, audit.Actor{})
	require.NoError(t, err)
	require.Equal(t, "ci", c.Key.Name)
	require.True(t, c.Key.ExpiresAt.Time.Equal(b.now.AddDate(1, 0, 0)))
}

// TestScopes: a key has the scope it was made with; only an admin makes
// admin keys, and an admin key of a user who is no longer an admin is a
// write key. Bad scopes write nothing.
func TestScopes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u := b.user(t, "ada@example.com", true)
	admin := b.user(t, "root@example.com", true)
	_, err := b.pool.Exec(ctx, "UPDATE users SET role = 'admin' WHERE id = $1", admin.ID)
	require.NoError(t, err)
	never := apikeys.Expiry{Choice: apikeys.ExpiryNever}

	tests := []struct {
		name    string
		user    queries.User
		scope   string
		want    string
		refused apikeys.FieldErrors
	}{
		{"read", u, apikeys.ScopeRead, apikeys.ScopeRead, nil},
		{"write", u, apikeys.ScopeWrite, apikeys.ScopeWrite, nil},
		{"admin by an admin", admin, apikeys.ScopeAdmin, apikeys.ScopeAdmin, nil},
		{"admin by a user", u, apikeys.ScopeAdmin, "", apikeys.FieldErrors{"scope": "ErrAPIKeyScopeAdminOnly"}},
		{"none", u, "", "", apikeys.FieldErrors{"scope": "ErrAPIKeyScopeInvalid"}},
		{"unknown", u, "root", "", apikeys.FieldErrors{"scope": "ErrAPIKeyScopeInvalid"}},
	}
	for _, tt := range tests {
		c, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, tt.user.ID), tt.name, tt.scope, never, audit.Actor{})
		if tt.refused != nil {
			var fe apikeys.FieldErrors
			require.ErrorAs(t, err, &fe, tt.name)
			require.Equal(t, tt.refused, fe, tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, c.Key.Scope, tt.name)
		got, err := b.svc.Authenticate(ctx, c.Value, "192.0.2.1")
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, got.Scope, tt.name)
		require.Equal(t, tt.want != apikeys.ScopeRead, got.CanWrite(), tt.name)
	}
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM api_keys WHERE user_id = $1", u.ID).Scan(&n))
	require.Equal(t, 2, n, "refused scopes wrote nothing")

	// No longer an admin: the admin key acts as a write key.
	c, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, admin.ID), "ops", apikeys.ScopeAdmin, never, audit.Actor{})
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, "UPDATE users SET role = 'user' WHERE id = $1", admin.ID)
	require.NoError(t, err)
	got, err := b.svc.Authenticate(ctx, c.Value, "192.0.2.1")
	require.NoError(t, err)
	require.Equal(t, apikeys.ScopeWrite, got.Scope)
}

// TestLastUsedAddress: the address a key was last used from is kept, and
// written again at once when it changes.
func TestLastUsedAddress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u := b.user(t, "ada@example.com", true)
	c := b.create(t, u, apikeys.Expiry{Choice: apikeys.ExpiryNever})
	lastIP := func() string {
		k, err := b.svc.Get(ctx, u.ID, c.Key.ID)
		require.NoError(t, err)
		return k.LastUsedIp
	}
	_, err := b.svc.Authenticate(ctx, c.Value, "192.0.2.1")
	require.NoError(t, err)
	require.Equal(t, "192.0.2.1", lastIP())
	_, err = b.svc.Authenticate(ctx, c.Value, "2001:db8::7")
	require.NoError(t, err)
	require.Equal(t, "2001:db8::7", lastIP(), "another address is written within the minute")
}
