package branding

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestApplyAuditsAndCaches: a change is stored with its logo and an audit
// event naming the fields changed; the process that saved it serves it
// at once, another once its copy is older than its TTL; a change that
// changes nothing writes nothing; a bad one writes nothing either.
func TestApplyAuditsAndCaches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	q := queries.New(pool)
	newUser := func(email, role string) int64 {
		u, err := q.UserCreate(ctx, queries.UserCreateParams{
			Email: email, Name: email, Role: role, EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
		})
		require.NoError(t, err)
		return u.ID
	}
	admin := audit.Actor{UserID: newUser("brand-admin@example.com", "admin"), Email: "brand-admin@example.com"}
	saver := &Service{Pool: pool, TTL: time.Hour}
	// Long enough that a loaded machine saves within it, short enough to wait out.
	other := &Service{Pool: pool, TTL: 3 * time.Second}
	require.Equal(t, Defaults(), saver.Current(ctx))
	require.Equal(t, Defaults(), other.Current(ctx))

	events := func() []map[string]any {
		rows, err := pool.Query(ctx, "SELECT details::text FROM audit_events WHERE action = $1 ORDER BY id", ActionUpdate)
		require.NoError(t, err)
		defer rows.Close()
		var out []map[string]any
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			d := map[string]any{}
			require.NoError(t, json.Unmarshal([]byte(s), &d))
			out = append(out, d)
		}
		require.NoError(t, rows.Err())
		return out
	}

	next := Defaults()
	next.ProductName, next.DefaultLanguage, next.IdleTimeout = "Acme Cloud", "zh-CN", time.Hour
	logo := pngOf(t, 40, 20)
	changed, err := saver.Apply(ctx, Change{Settings: next, NewLogo: logo}, admin)
	require.NoError(t, err)
	require.Equal(t, []string{FieldDefaultLanguage, FieldIdleTimeout, FieldLogo, FieldProductName}, changed)
	ev := events()
	require.Len(t, ev, 1)
	require.Equal(t, []any{"defaultLanguage", "idleTimeout", "logo", "productName"}, ev[0]["changed"])

	stored, err := saver.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, "Acme Cloud", stored.ProductName)
	require.NotEmpty(t, stored.Logo)
	file, ok, err := saver.LogoFile(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, logo, file.Image)
	require.Equal(t, TypePNG, file.ContentType)
	require.Equal(t, stored.Logo, file.ETag)

	require.Equal(t, stored, saver.Cached(), "the saving process serves the change at once")
	require.Equal(t, DefaultProductName, other.Current(ctx).ProductName, "another serves its copy until its TTL")
	require.Eventually(t, func() bool { return other.Current(ctx) == stored }, 15*time.Second, 50*time.Millisecond)

	// The same again: nothing written.
	next.Logo = ""
	changed, err = saver.Apply(ctx, Change{Settings: next}, admin)
	require.NoError(t, err)
	require.Empty(t, changed)
	require.Len(t, events(), 1)

	// Bad input: every field's error, nothing written.
	bad := next
	bad.ProductName, bad.SessionLifetime = "", time.Minute
	_, err = saver.Apply(ctx, Change{Settings: bad, NewLogo: []byte("GIF89a")}, admin)
	var errs input.Errors
	require.ErrorAs(t, err, &errs)
	require.Equal(t, input.Errors{
		FieldProductName: "ErrBrandingProductNameRequired", FieldSessionLifetime: "ErrBrandingSessionLifetime", FieldLogo: "ErrBrandingLogoType",
	}, errs)
	_, err = saver.Apply(ctx, Change{Settings: next, NewLogo: logo, RemoveLogo: true}, admin)
	require.ErrorAs(t, err, &errs)
	require.Equal(t, input.Errors{FieldLogo: "ErrBrandingLogoReplaceAndRemove"}, errs)
	require.Len(t, events(), 1)

	// Only an admin changes anything.
	user := audit.Actor{UserID: newUser("brand-user@example.com", "user")}
	_, err = saver.Apply(ctx, Change{Settings: Defaults()}, user)
	require.ErrorIs(t, err, adminauth.ErrNotAdmin)

	// Removing the logo removes its bytes.
	changed, err = saver.Apply(ctx, Change{Settings: next, RemoveLogo: true}, admin)
	require.NoError(t, err)
	require.Equal(t, []string{FieldLogo}, changed)
	_, ok, err = saver.LogoFile(ctx)
	require.NoError(t, err)
	require.False(t, ok)
	require.Empty(t, saver.Cached().Logo)
	require.Len(t, events(), 2)
}
