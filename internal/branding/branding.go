// Package branding is how the platform presents itself, as admins set it
// in the back office: the product name, logo, support contact and footer
// text, the language for visitors whose browser names none we have, and
// how long a browser's session lasts. The values are a settings row; the
// logo's bytes a row of their own (branding_logo), read only when served.
//
// Every page shows the branding and every session read checks the idle
// timeout, so Service keeps the settings in memory and reads them again
// at most once per TTL (Current).
package branding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/queries"
)

// Field names, as forms, field errors and audit events use them.
const (
	FieldProductName     = "productName"
	FieldLogo            = "logo"
	FieldSupportContact  = "supportContact"
	FieldFooterText      = "footerText"
	FieldDefaultLanguage = "defaultLanguage"
	FieldSessionLifetime = "sessionLifetime"
	FieldIdleTimeout     = "idleTimeout"
)

// Limits on the values.
const (
	DefaultProductName = "KubeBYON"
	MaxProductName     = 60  // characters
	MaxSupportContact  = 300 // characters
	MaxFooterText      = 500 // characters

	DefaultSessionLifetime = 14 * 24 * time.Hour
	DefaultIdleTimeout     = 3 * 24 * time.Hour
	MinSessionLifetime     = time.Hour
	MaxSessionLifetime     = 90 * 24 * time.Hour
	// MinIdleTimeout stays well above how often a session in use is saved
	// (a minute), which is what moves its idle expiry on.
	MinIdleTimeout = 15 * time.Minute
)

// Languages visitors can be shown by default, in the order the form
// offers them (catalog language tags).
var Languages = []string{"en", "zh-CN"}

// Settings is the branding and session settings.
type Settings struct {
	ProductName string `json:"productName"`
	// Logo is the ETag of the stored logo (branding_logo), "" for none:
	// it versions the logo's URL, and its change is the logo's.
	Logo string `json:"logo"`
	// SupportContact is an email address or an http(s) URL, "" for none.
	SupportContact string `json:"supportContact"`
	// FooterText replaces the footer's tagline when set; plain text.
	FooterText string `json:"footerText"`
	// DefaultLanguage is the language of a visitor whose browser asks for
	// none the catalog has, and who has chosen none.
	DefaultLanguage string `json:"defaultLanguage"`
	// SessionLifetime bounds a session from sign-in; IdleTimeout ends it
	// after that long without a request.
	SessionLifetime time.Duration `json:"sessionLifetime"`
	IdleTimeout     time.Duration `json:"idleTimeout"`
}

// Defaults are the settings before an admin changes anything.
func Defaults() Settings {
	return Settings{
		ProductName:     DefaultProductName,
		DefaultLanguage: Languages[0],
		SessionLifetime: DefaultSessionLifetime,
		IdleTimeout:     DefaultIdleTimeout,
	}
}

// SupportEmail is the support contact when it is an email address.
func (s Settings) SupportEmail() string {
	if strings.Contains(s.SupportContact, "://") {
		return ""
	}
	return s.SupportContact
}

// SupportURL is the support contact when it is a URL.
func (s Settings) SupportURL() string {
	if strings.Contains(s.SupportContact, "://") {
		return s.SupportContact
	}
	return ""
}

// Validate names the bad fields.
func (s Settings) Validate() error {
	errs := input.Errors{}
	switch n := utf8.RuneCountInString(s.ProductName); {
	case strings.TrimSpace(s.ProductName) == "":
		errs[FieldProductName] = "ErrBrandingProductNameRequired"
	case n > MaxProductName || !singleLine(s.ProductName):
		errs[FieldProductName] = "ErrBrandingProductName"
	}
	if s.SupportContact != "" && (utf8.RuneCountInString(s.SupportContact) > MaxSupportContact || !validContact(s.SupportContact)) {
		errs[FieldSupportContact] = "ErrBrandingSupportContact"
	}
	if utf8.RuneCountInString(s.FooterText) > MaxFooterText || !plainText(s.FooterText) {
		errs[FieldFooterText] = "ErrBrandingFooterText"
	}
	if !slices.Contains(Languages, s.DefaultLanguage) {
		errs[FieldDefaultLanguage] = "ErrBrandingLanguage"
	}
	// The idle timeout is bounded by the lifetime; by the longest one
	// while the lifetime is itself wrong (one error at a time).
	maxIdle := s.SessionLifetime
	if s.SessionLifetime < MinSessionLifetime || s.SessionLifetime > MaxSessionLifetime {
		errs[FieldSessionLifetime] = "ErrBrandingSessionLifetime"
		maxIdle = MaxSessionLifetime
	}
	if s.IdleTimeout < MinIdleTimeout || s.IdleTimeout > maxIdle {
		errs[FieldIdleTimeout] = "ErrBrandingIdleTimeout"
	}
	for _, f := range []struct{ name, v string }{
		{FieldProductName, s.ProductName}, {FieldSupportContact, s.SupportContact}, {FieldFooterText, s.FooterText},
	} {
		if !input.Storable(f.v) {
			errs[f.name] = input.ErrUnstorable
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// validContact accepts a bare email address or an http(s) URL with a host.
func validContact(s string) bool {
	if strings.ContainsAny(s, " \t\r\n<>\"") {
		return false
	}
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil
	}
	a, err := netmail.ParseAddress(s)
	return err == nil && a.Address == s
}

// singleLine reports whether s has no control characters.
func singleLine(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) < 0
}

// plainText reports whether s has no control characters but line breaks
// and tabs.
func plainText(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t'
	}) < 0
}

const settingsKey = "branding"

// Load reads the settings, filling defaults for what was never set.
func Load(ctx context.Context, q *queries.Queries) (Settings, error) {
	row, err := q.SettingGet(ctx, settingsKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return Defaults(), nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("load branding settings: %w", err)
	}
	s := Defaults()
	if err := json.Unmarshal(row.Value, &s); err != nil {
		return Settings{}, fmt.Errorf("decode branding settings: %w", err)
	}
	return s, nil
}

// save stores s (validated) with q, the transaction's.
func save(ctx context.Context, q *queries.Queries, s Settings) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode branding settings: %w", err)
	}
	if err := q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: settingsKey, Value: b}); err != nil {
		return fmt.Errorf("store branding settings: %w", err)
	}
	return nil
}
