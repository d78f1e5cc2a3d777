package signinproviders

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := Provider{Label: "Company SSO", Issuer: "https://sso.example.com/realms/co", ClientID: "id", ClientSecret: "s", Scopes: "openid email"}
	tests := []struct {
		name     string
		provider string
		change   func(*Provider)
		field    string // "" when valid
	}{
		{"complete", OIDC, func(*Provider) {}, ""},
		{"nothing at all", OIDC, func(p *Provider) { *p = Provider{} }, ""},
		{"default scopes", OIDC, func(p *Provider) { p.Scopes = "" }, ""},
		{"plain http issuer", OIDC, func(p *Provider) { p.Issuer = "http://127.0.0.1:5556/dex" }, ""},
		{"GitHub needs no issuer", GitHub, func(p *Provider) { *p = Provider{ClientID: "id", ClientSecret: "s"} }, ""},
		{"no client ID", OIDC, func(p *Provider) { p.ClientID = "" }, FieldClientID},
		{"no secret", GitHub, func(p *Provider) { *p = Provider{ClientID: "id"} }, FieldClientSecret},
		{"no issuer", OIDC, func(p *Provider) { p.Issuer = "" }, FieldIssuer},
		{"issuer not http", OIDC, func(p *Provider) { p.Issuer = "ftp://sso.example.com" }, FieldIssuer},
		{"issuer with a query", OIDC, func(p *Provider) { p.Issuer = "https://sso.example.com/?x=1" }, FieldIssuer},
		{"issuer without host", OIDC, func(p *Provider) { p.Issuer = "https:///realms" }, FieldIssuer},
		{"scopes without openid", OIDC, func(p *Provider) { p.Scopes = "email profile" }, FieldScopes},
		{"scope with a quote", OIDC, func(p *Provider) { p.Scopes = `openid "email"` }, FieldScopes},
		{"long label", OIDC, func(p *Provider) { p.Label = string(bytes.Repeat([]byte("x"), 61)) }, FieldLabel},
		{"control characters", OIDC, func(p *Provider) { p.ClientID = "id\x00" }, FieldClientID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := ok
			tt.change(&p)
			err := p.Validate(tt.provider)
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			var errs input.Errors
			require.ErrorAs(t, err, &errs)
			require.Contains(t, errs, tt.field)
			require.Len(t, errs, 1)
		})
	}
}

// TestApplyKeepsTheOthers: a change to one provider leaves the others as
// stored, even a secret this key cannot open; the unreadable secret is
// reported and counts as changed when its provider is saved.
func TestApplyKeepsTheOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	other, err := secrets.New(bytes.Repeat([]byte{1}, 32))
	require.NoError(t, err)
	box, err := secrets.New(bytes.Repeat([]byte{2}, 32))
	require.NoError(t, err)
	require.NoError(t, saveOne(ctx, queries.New(pool), other, GitHub, Provider{ClientID: "gh", ClientSecret: "sealed elsewhere"}))

	hash, err := passwords.Hash("admin password")
	require.NoError(t, err)
	admin, err := queries.New(pool).UserCreate(ctx, queries.UserCreateParams{
		Email: "admin@example.com", Name: "Admin", Role: "admin",
		PasswordHash: pgtype.Text{String: hash, Valid: true}, EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
	})
	require.NoError(t, err)
	s := &Service{Pool: pool, Box: box}
	l, err := s.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{GitHub}, l.Unreadable)
	require.Equal(t, "gh", l.Settings[GitHub].ClientID)

	changed, err := s.Apply(ctx, Change{
		Providers: map[string]ProviderChange{Google: {Provider: Provider{ClientID: "g"}, Secret: input.SecretChange{Value: "google secret"}}},
		Confirm:   "admin password",
	}, audit.Actor{UserID: admin.ID, Email: admin.Email})
	require.NoError(t, err)
	require.Equal(t, []string{"google-clientId", "google-clientSecret"}, changed)
	l, err = s.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, "google secret", l.Settings[Google].ClientSecret)
	require.Equal(t, []string{GitHub}, l.Unreadable, "GitHub's secret was left as it was")
	l, err = load(ctx, queries.New(pool), other)
	require.NoError(t, err)
	require.Equal(t, "sealed elsewhere", l.Settings[GitHub].ClientSecret)

	// Saving GitHub as it reads writes its secret anew: a form that keeps
	// it cannot, so it needs one.
	_, err = s.Apply(ctx, Change{Providers: map[string]ProviderChange{GitHub: {Provider: Provider{ClientID: "gh"}}}, Confirm: "admin password"},
		audit.Actor{UserID: admin.ID, Email: admin.Email})
	var errs input.Errors
	require.ErrorAs(t, err, &errs)
	require.Equal(t, input.Errors{"github-clientSecret": "ErrSignInClientSecretRequired"}, errs)
	changed, err = s.Apply(ctx, Change{
		Providers: map[string]ProviderChange{GitHub: {Provider: Provider{ClientID: "gh"}, Secret: input.SecretChange{Value: "new"}}},
		Confirm:   "admin password",
	}, audit.Actor{UserID: admin.ID, Email: admin.Email})
	require.NoError(t, err)
	require.Equal(t, []string{"github-clientSecret"}, changed)

	var details []string
	rows, err := pool.Query(ctx, "SELECT details::text FROM audit_events WHERE action = $1 ORDER BY id", ActionUpdate)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var d string
		require.NoError(t, rows.Scan(&d))
		require.NotContains(t, d, "google secret", "no secret value")
		details = append(details, d)
	}
	require.Len(t, details, 2)
}
