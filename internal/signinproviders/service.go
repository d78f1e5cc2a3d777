package signinproviders

import (
	"context"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// ActionUpdate is the audit action of a change to a provider.
const ActionUpdate = "admin.sign_in_provider_update"

// Errors whose messages admins see (catalog message IDs).
var (
	// ErrConfirmRequired: a change was asked without the admin's password
	// (or a fresh sign-in with a provider, for admins without one).
	ErrConfirmRequired = errors.New("ErrAdminSignInConfirmRequired")
	// ErrReplaceAndClear: a new client secret and "clear" in one form.
	ErrReplaceAndClear = errors.New("ErrAdminSignInReplaceAndClear")
)

// ErrUnknownProvider is a provider name that is not one of Names.
var ErrUnknownProvider = errors.New("signinproviders: no such provider")

// Service is the admin's actions on the sign-in providers and their reads.
type Service struct {
	Pool *pgxpool.Pool
	Box  *secrets.Box
}

// Load reads the stored settings.
func (s *Service) Load(ctx context.Context) (Loaded, error) {
	return load(ctx, queries.New(s.Pool), s.Box)
}

// ProviderChange is what the form asks of one provider.
type ProviderChange struct {
	// Provider holds every field but the client secret, which changes
	// only as Secret asks.
	Provider Provider
	Secret   input.SecretChange
}

// on is the provider the change makes of the stored one; a form with
// nothing filled in clears it.
func (c ProviderChange) on(cur Provider) Provider {
	next := c.Provider
	next.ClientSecret = c.Secret.Apply(cur.ClientSecret)
	if next.Label == "" && next.Issuer == "" && next.ClientID == "" && next.Scopes == "" && c.Secret.Value == "" {
		return Provider{}
	}
	return next
}

// Change is a submitted form: the providers it names, by name (the others
// stay as they are).
type Change struct {
	Providers map[string]ProviderChange
	// Confirm is the admin's own password: every change needs it (or, for
	// an admin without one, a fresh sign-in with a provider), since who
	// controls a provider's settings can sign in as its users.
	Confirm string
}

// FieldName is the name of a provider's field in forms, field errors and
// audit events: "oidc-issuer".
func FieldName(provider, field string) string { return provider + "-" + field }

// plan is the settings the change c makes of cur, and the fields it
// changes, sorted.
func (c Change) plan(cur Loaded) (Settings, []string, error) {
	next := Settings{}
	var changed []string
	for _, name := range Names {
		pc, ok := c.Providers[name]
		if !ok {
			continue
		}
		p := pc.on(cur.Settings[name])
		fields, err := diff(cur.Settings[name], p, slices.Contains(cur.Unreadable, name))
		if err != nil {
			return nil, nil, err
		}
		for _, f := range fields {
			changed = append(changed, FieldName(name, f))
		}
		if len(fields) > 0 {
			next[name] = p
		}
	}
	slices.Sort(changed)
	return next, changed, nil
}

// Apply stores the change on behalf of the admin actor.UserID and returns
// the names of the fields it changed (FieldName), sorted; none means
// nothing was written. The audit event names the fields, and of each
// secret only whether it was replaced or cleared. Errors: input.Errors
// (by FieldName), ErrUnknownProvider, ErrConfirmRequired, and adminauth's
// ErrWrongPassword, *LimitedError and ErrNotAdmin.
func (s *Service) Apply(ctx context.Context, c Change, actor audit.Actor) ([]string, error) {
	for name := range c.Providers {
		if !slices.Contains(Names, name) {
			return nil, ErrUnknownProvider
		}
	}
	cur, err := s.Load(ctx)
	if err != nil {
		return nil, err
	}
	errs := input.Errors{}
	for name, pc := range c.Providers {
		secret := FieldName(name, FieldClientSecret)
		if pc.Secret.Contradicts() {
			errs[secret] = ErrReplaceAndClear.Error()
		}
		var invalid input.Errors
		if err := pc.on(cur.Settings[name]).Validate(name); errors.As(err, &invalid) {
			for k, v := range invalid {
				if _, ok := errs[FieldName(name, k)]; !ok {
					errs[FieldName(name, k)] = v
				}
			}
		} else if err != nil {
			return nil, err
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	_, changed, err := c.plan(cur)
	if err != nil || len(changed) == 0 {
		return nil, err
	}
	confirm := adminauth.Confirm{Needed: true, Password: c.Confirm, Required: ErrConfirmRequired}
	err = adminauth.SaveSettings(ctx, s.Pool, actor.UserID, settingsKey, confirm, func(q *queries.Queries) error {
		// Planned again under the lock: another admin may have saved
		// since the settings were read.
		cur, err := load(ctx, q, s.Box)
		if err != nil {
			return err
		}
		var next Settings
		if next, changed, err = c.plan(cur); err != nil || len(changed) == 0 {
			return err
		}
		d := map[string]any{"changed": changed}
		for name, p := range next {
			if err := saveOne(ctx, q, s.Box, name, p); err != nil {
				return err
			}
			if secret := FieldName(name, FieldClientSecret); slices.Contains(changed, secret) {
				d[secret] = "cleared"
				if p.ClientSecret != "" {
					d[secret] = "replaced"
				}
			}
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: ActionUpdate, TargetType: "settings", TargetID: settingsKey, Details: d,
		})
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// Tag is the entity tag of the stored sign-in settings (adminauth.SettingsTag).
func (s *Service) Tag(ctx context.Context) (string, error) {
	return adminauth.SettingsTag(ctx, queries.New(s.Pool), settingsKey)
}
