package mailsettings

import (
	"context"
	"errors"
	"log/slog"
	netmail "net/mail"
	"net/url"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/branding"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/mail"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// Audit actions.
const (
	ActionUpdate = "admin.mail_update"
	ActionTest   = "admin.mail_test"
)

// Errors whose messages admins see (catalog message IDs).
var (
	// ErrConfirmRequired: a change was asked without the admin's password.
	ErrConfirmRequired = errors.New("ErrAdminMailConfirmRequired")
	// ErrReplaceAndClear: a new SMTP password and "clear" in one form.
	ErrReplaceAndClear = errors.New("ErrAdminMailReplaceAndClear")
)

// Service is the platform's mail.Sender (Send) and the admin's actions on
// the mail settings.
type Service struct {
	Pool *pgxpool.Pool
	Box  *secrets.Box
	// EnvURL is KUBEBYON_SMTP_URL, parsed; nil when unset.
	EnvURL *url.URL
	// From is KUBEBYON_MAIL_FROM (or its default): the sender when the
	// settings name none.
	From   string
	Logger *slog.Logger
}

// Source is where the mail server in effect comes from.
type Source string

// Sources of the mail server.
const (
	SourceSettings Source = "settings" // the admin mail settings
	SourceEnv      Source = "env"      // KUBEBYON_SMTP_URL
	SourceLog      Source = "none"     // none: mail is written to the log
)

// Send implements mail.Sender: through the server the settings name, read
// now (mail is rare: one settings read per email), else KUBEBYON_SMTP_URL,
// else into the log. The sender's name is the product name of the
// branding settings (read now too) unless the address names another.
func (s *Service) Send(ctx context.Context, m mail.Message) error {
	q := queries.New(s.Pool)
	st, err := Load(ctx, q, s.Box)
	if err != nil {
		return err
	}
	brand, err := branding.Load(ctx, q)
	if err != nil {
		return err
	}
	sender, _ := s.senderNamed(st, brand.ProductName)
	return sender.Send(ctx, m)
}

// sender is the transport for the settings st.
func (s *Service) sender(st Settings) (mail.Sender, Source) {
	return s.senderNamed(st, "")
}

// senderNamed is sender, the sender named product when its address names
// no one or the default name ("" keeps it as it is).
func (s *Service) senderNamed(st Settings, product string) (mail.Sender, Source) {
	switch {
	case st.Set():
		from := st.From
		if from == "" {
			from = s.From
		}
		return mail.NewSMTP(st.URL(), named(from, product)), SourceSettings
	case s.EnvURL != nil:
		return mail.NewSMTP(s.EnvURL, named(s.From, product)), SourceEnv
	}
	return &mail.Log{Logger: s.Logger}, SourceLog
}

// named gives the address from the display name product when it has none
// or the default one, which KUBEBYON_MAIL_FROM's default carries.
func named(from, product string) string {
	a, err := netmail.ParseAddress(from)
	if product == "" || err != nil || (a.Name != "" && a.Name != branding.DefaultProductName) {
		return from
	}
	a.Name = product
	return a.String()
}

// Source tells which mail server st (the stored settings) puts in effect.
func (s *Service) Source(st Settings) Source {
	_, src := s.sender(st)
	return src
}

// EnvServer is KUBEBYON_SMTP_URL's host:port, "" when unset.
func (s *Service) EnvServer() string {
	if s.EnvURL == nil {
		return ""
	}
	return s.EnvURL.Host
}

// Load reads the stored settings; unreadable tells that the stored password
// cannot be opened (it reads as empty).
func (s *Service) Load(ctx context.Context) (st Settings, unreadable bool, err error) {
	st, err = Load(ctx, queries.New(s.Pool), s.Box)
	if errors.Is(err, ErrUnreadable) {
		return st, true, nil
	}
	return st, false, err
}

// SecretChange is what a form asks of a stored secret (input.SecretChange).
type SecretChange = input.SecretChange

// Change is a submitted settings form.
type Change struct {
	// Settings holds every field but the password, which changes only as
	// Password asks.
	Settings Settings
	Password SecretChange
	// Confirm is the admin's own password: every change needs it, since
	// the mail server receives every sign-in code and password reset.
	Confirm string
}

// on is the settings the change makes of the stored ones; a form with
// nothing filled in clears them all.
func (c Change) on(cur Settings) Settings {
	next := c.Settings
	next.Password = c.Password.Apply(cur.Password)
	if next.Host == "" && next.Port == 0 && next.Username == "" && next.From == "" && c.Password.Value == "" {
		return Settings{}
	}
	return next
}

// Apply stores the change on behalf of the admin actor.UserID and returns
// the names of the fields it changed, sorted; none means nothing was
// written. Errors: input.Errors, ErrConfirmRequired, and adminauth's
// ErrWrongPassword, *LimitedError and ErrNotAdmin.
func (s *Service) Apply(ctx context.Context, c Change, actor audit.Actor) ([]string, error) {
	errs := input.Errors{}
	if c.Password.Contradicts() {
		errs[FieldPassword] = ErrReplaceAndClear.Error()
	}
	cur, unreadable, err := s.Load(ctx)
	if err != nil {
		return nil, err
	}
	next := c.on(cur)
	var invalid input.Errors
	if err := next.Validate(); errors.As(err, &invalid) {
		for k, v := range invalid {
			if _, ok := errs[k]; !ok {
				errs[k] = v
			}
		}
	} else if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs
	}
	changed, err := changes(cur, next, unreadable)
	if err != nil || len(changed) == 0 {
		return nil, err
	}
	confirm := adminauth.Confirm{Needed: true, Password: c.Confirm, Required: ErrConfirmRequired}
	err = adminauth.SaveSettings(ctx, s.Pool, actor.UserID, settingsKey, confirm, func(q *queries.Queries) error {
		// Compared again under the lock: another admin may have saved
		// since the settings were read.
		cur, err := Load(ctx, q, s.Box)
		unreadable := errors.Is(err, ErrUnreadable)
		if err != nil && !unreadable {
			return err
		}
		next := c.on(cur)
		if changed, err = changes(cur, next, unreadable); err != nil || len(changed) == 0 {
			return err
		}
		if err := save(ctx, q, s.Box, next); err != nil {
			return err
		}
		d := map[string]any{"changed": changed}
		if slices.Contains(changed, FieldPassword) {
			d[FieldPassword] = "cleared"
			if next.Password != "" {
				d[FieldPassword] = "replaced"
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

// changes is diff, with an unreadable stored password counted as changed:
// saving writes it anew (the value given, or none).
func changes(cur, next Settings, unreadable bool) ([]string, error) {
	changed, err := diff(cur, next)
	if err != nil {
		return nil, err
	}
	if unreadable && !slices.Contains(changed, FieldPassword) {
		changed = append(changed, FieldPassword)
		slices.Sort(changed)
	}
	return changed, nil
}

// Tag is the entity tag of the stored mail settings (adminauth.SettingsTag).
func (s *Service) Tag(ctx context.Context) (string, error) {
	return adminauth.SettingsTag(ctx, queries.New(s.Pool), settingsKey)
}
