// Package signinproviders is the sign-in providers admins set in the back
// office: GitHub, Google and one generic OpenID Connect provider (company
// SSO such as Keycloak, Authentik or Dex), each with its client ID and its
// client secret (sealed). A provider set here wins over its environment
// variables (KUBEBYON_GITHUB_CLIENT_ID, KUBEBYON_GOOGLE_CLIENT_ID); the
// handlers read the settings at each request, so a change takes effect
// without a restart in every process.
package signinproviders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// Provider names, in URLs (/auth/<name>), in oauth_identities.provider and
// in the order of the sign-in buttons.
const (
	GitHub = "github"
	Google = "google"
	// OIDC is the generic OpenID Connect provider.
	OIDC = "oidc"
)

// Names are the providers, in button order.
var Names = []string{GitHub, Google, OIDC}

// Field names, as forms, field errors and audit events use them.
const (
	FieldLabel        = "label"
	FieldIssuer       = "issuer"
	FieldClientID     = "clientId"
	FieldClientSecret = "clientSecret"
	FieldScopes       = "scopes"
)

// DefaultScopes are what the OpenID Connect provider is asked for when the
// admin names no scopes.
const DefaultScopes = "openid email profile"

// DefaultLabel names the OpenID Connect provider on its button when the
// admin names it nothing.
const DefaultLabel = "SSO"

// Provider is one provider's settings. Zero (no client ID) is not set: the
// environment's, if any, is in effect. Label, Issuer and Scopes are for
// the OpenID Connect provider only.
type Provider struct {
	Label        string `json:"label"`
	Issuer       string `json:"issuer"`
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"-"`
	Scopes       string `json:"scopes"`
}

// Set reports whether the settings name a client, which puts the
// provider in effect.
func (p Provider) Set() bool { return p.ClientID != "" }

// ButtonLabel is the label people see, DefaultLabel when none is set.
func (p Provider) ButtonLabel() string {
	if p.Label == "" {
		return DefaultLabel
	}
	return p.Label
}

// ScopeList is the scopes to ask for, DefaultScopes when none are set.
func (p Provider) ScopeList() []string {
	if p.Scopes == "" {
		return strings.Fields(DefaultScopes)
	}
	return strings.Fields(p.Scopes)
}

// DiscoveryURL is where the issuer's OpenID Connect discovery document is
// (OpenID Connect Discovery 4).
func (p Provider) DiscoveryURL() string {
	return strings.TrimSuffix(p.Issuer, "/") + "/.well-known/openid-configuration"
}

func (p Provider) empty() bool {
	return p.Label == "" && p.Issuer == "" && p.ClientID == "" && p.ClientSecret == "" && p.Scopes == ""
}

// Validate names the bad fields of the provider name's settings: nothing
// at all is valid (not set); otherwise a client ID and secret are needed,
// and for OpenID Connect an http(s) issuer URL and scopes that include
// openid.
func (p Provider) Validate(name string) error {
	if p.empty() {
		return nil
	}
	errs := input.Errors{}
	if p.ClientID == "" {
		errs[FieldClientID] = "ErrSignInClientIDRequired"
	}
	if p.ClientSecret == "" {
		errs[FieldClientSecret] = "ErrSignInClientSecretRequired"
	}
	if name == OIDC {
		if p.Issuer == "" {
			errs[FieldIssuer] = "ErrSignInIssuerRequired"
		} else if !validIssuer(p.Issuer) {
			errs[FieldIssuer] = "ErrSignInIssuer"
		}
		if p.Scopes != "" && !validScopes(p.Scopes) {
			errs[FieldScopes] = "ErrSignInScopes"
		}
		if len(p.Label) > 60 {
			errs[FieldLabel] = "ErrSignInLabel"
		}
	}
	for _, f := range []struct{ name, v string }{
		{FieldLabel, p.Label}, {FieldIssuer, p.Issuer}, {FieldClientID, p.ClientID}, {FieldClientSecret, p.ClientSecret}, {FieldScopes, p.Scopes},
	} {
		if !input.Storable(f.v) || len(f.v) > 1000 {
			errs[f.name] = input.ErrUnstorable
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// validIssuer: an absolute http or https URL with a host and without query
// or fragment (OpenID Connect Discovery 3: the issuer is such a URL).
func validIssuer(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" &&
		u.User == nil && u.RawQuery == "" && u.Fragment == "" && !strings.ContainsAny(s, " \t")
}

// validScopes: scope tokens (RFC 6749 3.3), openid among them.
func validScopes(s string) bool {
	fields := strings.Fields(s)
	for _, f := range fields {
		for _, r := range f {
			if r < 0x21 || r > 0x7e || r == '"' || r == '\\' {
				return false
			}
		}
	}
	return slices.Contains(fields, "openid")
}

// Settings are every provider's settings, by name.
type Settings map[string]Provider

// stored is a Provider as it sits in the settings table: the secret sealed.
type stored struct {
	Provider
	ClientSecretSealed string `json:"clientSecretSealed,omitempty"`
}

const settingsKey = "sign_in_providers"

// Loaded is the stored settings and the providers whose secret cannot be
// opened (sealed with another KUBEBYON_SECRET_KEY; it reads as empty).
type Loaded struct {
	Settings   Settings
	Unreadable []string
}

// load reads the settings with q; empty when never saved.
func load(ctx context.Context, q *queries.Queries, box *secrets.Box) (Loaded, error) {
	l := Loaded{Settings: Settings{}}
	row, err := q.SettingGet(ctx, settingsKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, nil
	}
	if err != nil {
		return l, fmt.Errorf("load sign-in providers: %w", err)
	}
	var st map[string]stored
	if err := json.Unmarshal(row.Value, &st); err != nil {
		return l, fmt.Errorf("decode sign-in providers: %w", err)
	}
	for _, name := range Names {
		s, ok := st[name]
		if !ok {
			continue
		}
		if s.ClientSecretSealed != "" {
			b, err := box.Open(s.ClientSecretSealed)
			if err != nil {
				l.Unreadable = append(l.Unreadable, name)
			} else {
				s.ClientSecret = string(b)
			}
		}
		l.Settings[name] = s.Provider
	}
	return l, nil
}

// saveOne stores p as the provider name's settings with q, the
// transaction's, leaving the other providers as stored (their secrets
// too, even those this key cannot open).
func saveOne(ctx context.Context, q *queries.Queries, box *secrets.Box, name string, p Provider) error {
	all := map[string]json.RawMessage{}
	row, err := q.SettingGet(ctx, settingsKey)
	switch {
	case err == nil:
		if err := json.Unmarshal(row.Value, &all); err != nil {
			return fmt.Errorf("decode sign-in providers: %w", err)
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("load sign-in providers: %w", err)
	}
	delete(all, name)
	if !p.empty() {
		s := stored{Provider: p}
		if p.ClientSecret != "" {
			s.ClientSecretSealed = box.Seal([]byte(p.ClientSecret))
		}
		b, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("encode sign-in provider %s: %w", name, err)
		}
		all[name] = b
	}
	b, err := json.Marshal(all)
	if err != nil {
		return fmt.Errorf("encode sign-in providers: %w", err)
	}
	if err := q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: settingsKey, Value: b, Secret: true}); err != nil {
		return fmt.Errorf("store sign-in providers: %w", err)
	}
	return nil
}

// diff names the fields that differ, by their JSON names (the secret as
// FieldClientSecret), sorted; an unreadable stored secret counts as
// changed, since saving writes it anew.
func diff(a, b Provider, unreadable bool) ([]string, error) {
	changed, err := audit.Changed(a, b)
	if err != nil {
		return nil, err
	}
	if a.ClientSecret != b.ClientSecret || (unreadable && !b.empty()) {
		changed = append(changed, FieldClientSecret)
	}
	slices.Sort(changed)
	return changed, nil
}
