// Package signup is who may make an account: the sign-up policy admins
// set (open, invite-only, closed), the email domains allowed to sign up on
// their own, and the invitations admins send.
//
// Every way an account is made asks Admit (internal/accounts: the sign-up
// form, its emailed code, a first sign-in with a provider). An admin's
// invitation admits its address whatever the policy and the domains say:
// inviting someone is the admin's explicit choice. The first admin, made
// with `kubebyon admin create`, is not a sign-up and is not asked.
package signup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/queries"
)

// Policies.
const (
	// PolicyOpen: anyone signs up (at an allowed domain); the default.
	PolicyOpen = "open"
	// PolicyInviteOnly: only people an admin invited.
	PolicyInviteOnly = "invite_only"
	// PolicyClosed: nobody signs up on their own; invitations still work.
	PolicyClosed = "closed"
)

// Policies are the policies in the order the form offers them.
var Policies = []string{PolicyOpen, PolicyInviteOnly, PolicyClosed}

// Field names, as forms, field errors and audit events use them.
const (
	FieldPolicy  = "policy"
	FieldDomains = "allowedDomains"
)

// MaxDomains bounds the allowed domains list.
const MaxDomains = 100

// Errors whose messages people see (catalog message IDs).
var (
	// ErrClosed: sign-up is closed and the address has no invitation.
	ErrClosed = errors.New("ErrSignUpClosed")
	// ErrInviteOnly: sign-up is by invitation and the address has none.
	ErrInviteOnly = errors.New("ErrSignUpInviteOnly")
	// ErrDomain: the address is not at an allowed domain and has no
	// invitation.
	ErrDomain = errors.New("ErrSignUpDomain")
)

// Settings is who may sign up on their own.
type Settings struct {
	Policy string `json:"policy"`
	// AllowedDomains are lowercase domain names, sorted; empty: any. An
	// address must be at one of them exactly: a subdomain is another
	// domain, to be listed on its own.
	AllowedDomains []string `json:"allowedDomains"`
}

// Default is the settings never saved: open to every domain, as the
// platform was before admins could choose.
func Default() Settings { return Settings{Policy: PolicyOpen, AllowedDomains: []string{}} }

// Validate names the bad fields.
func (s Settings) Validate() error {
	errs := input.Errors{}
	if !slices.Contains(Policies, s.Policy) {
		errs[FieldPolicy] = "ErrSignUpPolicy"
	}
	if len(s.AllowedDomains) > MaxDomains {
		errs[FieldDomains] = "ErrSignUpDomainsTooMany"
	}
	for _, d := range s.AllowedDomains {
		if !validDomain(d) {
			errs[FieldDomains] = "ErrSignUpDomainInvalid"
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// ParseDomains reads domains given one a line, or separated by commas or
// spaces, as the settings keep them: lowercase, without a leading "@",
// sorted, each once.
func ParseDomains(raw string) []string {
	out := []string{}
	for _, f := range strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		d := strings.TrimSuffix(strings.TrimPrefix(strings.ToLower(f), "@"), ".")
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// validDomain reports whether d is a domain name an address can be at:
// dot-separated labels of letters, digits and inner hyphens, at least two.
func validDomain(d string) bool {
	if len(d) > 253 {
		return false
	}
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
				return false
			}
		}
	}
	return true
}

// DomainAllowed reports whether email is at an allowed domain, in any
// case; any domain is when none is listed.
func (s Settings) DomainAllowed(email string) bool {
	if len(s.AllowedDomains) == 0 {
		return true
	}
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return false
	}
	return slices.Contains(s.AllowedDomains, strings.ToLower(email[at+1:]))
}

// Check says whether email may make an account on its own, without an
// invitation: nil, or ErrClosed, ErrInviteOnly or ErrDomain.
func (s Settings) Check(email string) error {
	switch s.Policy {
	case PolicyClosed:
		return ErrClosed
	case PolicyInviteOnly:
		return ErrInviteOnly
	}
	if !s.DomainAllowed(email) {
		return ErrDomain
	}
	return nil
}

// SettingsKey is the settings row of the sign-up settings.
const SettingsKey = "signup"

// Load reads the settings with q; Default when never saved.
func Load(ctx context.Context, q *queries.Queries) (Settings, error) {
	row, err := q.SettingGet(ctx, SettingsKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return Default(), nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("load sign-up settings: %w", err)
	}
	s := Default()
	if err := json.Unmarshal(row.Value, &s); err != nil {
		return Settings{}, fmt.Errorf("decode sign-up settings: %w", err)
	}
	if s.AllowedDomains == nil {
		s.AllowedDomains = []string{}
	}
	return s, nil
}

// Save stores s (validated) with q, the transaction's.
func Save(ctx context.Context, q *queries.Queries, s Settings) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode sign-up settings: %w", err)
	}
	if err := q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: SettingsKey, Value: b}); err != nil {
		return fmt.Errorf("store sign-up settings: %w", err)
	}
	return nil
}

// Diff names the fields that differ, by their JSON names, sorted.
func Diff(a, b Settings) ([]string, error) {
	changed, err := audit.Changed(a, b)
	if err != nil {
		return nil, err
	}
	slices.Sort(changed)
	return changed, nil
}

// Admit says whether email may have an account made for it now, in q (the
// transaction that makes it): an open invitation of the address admits it,
// else the settings must. It returns that invitation (zero when there is
// none), which the caller uses up with Accept once the account is made and
// its address verified; else ErrClosed, ErrInviteOnly or ErrDomain.
func Admit(ctx context.Context, q *queries.Queries, email string, now time.Time) (queries.Invitation, error) {
	inv, err := q.InvitationGetOpenByEmail(ctx, queries.InvitationGetOpenByEmailParams{Email: email, Now: timestamp(now)})
	if err == nil {
		return inv, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return inv, fmt.Errorf("look up invitation: %w", err)
	}
	s, err := Load(ctx, q)
	if err != nil {
		return queries.Invitation{}, err
	}
	return queries.Invitation{}, s.Check(email)
}

func timestamp(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t, Valid: true} }
