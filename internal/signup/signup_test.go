package signup

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestValidate(t *testing.T) {
	t.Parallel()
	many := make([]string, MaxDomains+1)
	for i := range many {
		many[i] = "d" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".example.com"
	}
	tests := []struct {
		name  string
		s     Settings
		field string // "" when valid
	}{
		{"default", Default(), ""},
		{"invite-only with domains", Settings{Policy: PolicyInviteOnly, AllowedDomains: []string{"example.com", "eu.example.org"}}, ""},
		{"closed", Settings{Policy: PolicyClosed}, ""},
		{"no policy", Settings{}, FieldPolicy},
		{"unknown policy", Settings{Policy: "sometimes"}, FieldPolicy},
		{"one label", Settings{Policy: PolicyOpen, AllowedDomains: []string{"localhost"}}, FieldDomains},
		{"an address", Settings{Policy: PolicyOpen, AllowedDomains: []string{"me@example.com"}}, FieldDomains},
		{"leading hyphen", Settings{Policy: PolicyOpen, AllowedDomains: []string{"-x.example.com"}}, FieldDomains},
		{"empty label", Settings{Policy: PolicyOpen, AllowedDomains: []string{"example..com"}}, FieldDomains},
		{"too many", Settings{Policy: PolicyOpen, AllowedDomains: many}, FieldDomains},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.s.Validate()
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

func TestParseDomains(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"a.example", "example.com", "example.org"},
		ParseDomains(" Example.COM\n@example.org, a.example.\r\nexample.com;  "))
	require.Equal(t, []string{}, ParseDomains(" \n "))
}

func TestCheck(t *testing.T) {
	t.Parallel()
	domains := []string{"example.com", "example.org"}
	tests := []struct {
		name  string
		s     Settings
		email string
		want  error
	}{
		{"open, any domain", Default(), "ada@anywhere.test", nil},
		{"open, listed domain", Settings{Policy: PolicyOpen, AllowedDomains: domains}, "ada@example.org", nil},
		{"open, listed domain in capitals", Settings{Policy: PolicyOpen, AllowedDomains: domains}, "Ada@EXAMPLE.COM", nil},
		{"open, other domain", Settings{Policy: PolicyOpen, AllowedDomains: domains}, "ada@example.net", ErrDomain},
		{"open, subdomain is another domain", Settings{Policy: PolicyOpen, AllowedDomains: domains}, "ada@eu.example.com", ErrDomain},
		{"open, suffix is another domain", Settings{Policy: PolicyOpen, AllowedDomains: domains}, "ada@notexample.com", ErrDomain},
		{"invite-only", Settings{Policy: PolicyInviteOnly}, "ada@example.com", ErrInviteOnly},
		{"closed", Settings{Policy: PolicyClosed, AllowedDomains: domains}, "ada@example.com", ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.s.Check(tt.email))
		})
	}
}

// TestAdmit: the stored settings decide, unless the address has an open
// invitation, which admits it whatever they say.
func TestAdmit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := queries.New(testenv.DB(t))
	now := time.Now()

	inv, err := Admit(ctx, q, "ada@example.com", now)
	require.NoError(t, err, "never saved: open")
	require.Zero(t, inv.ID)

	require.NoError(t, Save(ctx, q, Settings{Policy: PolicyOpen, AllowedDomains: []string{"example.com"}}))
	_, err = Admit(ctx, q, "ada@example.com", now)
	require.NoError(t, err)
	_, err = Admit(ctx, q, "ada@example.net", now)
	require.ErrorIs(t, err, ErrDomain)

	require.NoError(t, Save(ctx, q, Settings{Policy: PolicyClosed}))
	st, err := Load(ctx, q)
	require.NoError(t, err)
	require.Equal(t, Settings{Policy: PolicyClosed, AllowedDomains: []string{}}, st)
	_, err = Admit(ctx, q, "grace@example.net", now)
	require.ErrorIs(t, err, ErrClosed)

	created, err := q.InvitationCreate(ctx, queries.InvitationCreateParams{
		Email: "Grace@Example.net", TokenHash: "h1", ExpiresAt: pgtype.Timestamptz{Time: now.Add(time.Hour), Valid: true},
	})
	require.NoError(t, err)
	inv, err = Admit(ctx, q, "grace@example.net", now)
	require.NoError(t, err, "an invitation admits its address, in any case")
	require.Equal(t, created.ID, inv.ID)
	_, err = Admit(ctx, q, "grace@example.net", now.Add(2*time.Hour))
	require.ErrorIs(t, err, ErrClosed, "not once it has expired")

	require.NoError(t, Save(ctx, q, Settings{Policy: PolicyInviteOnly}))
	_, err = Admit(ctx, q, "someone@example.net", now)
	require.ErrorIs(t, err, ErrInviteOnly)
}
