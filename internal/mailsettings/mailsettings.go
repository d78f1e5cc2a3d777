// Package mailsettings is the mail server admins set in the back office:
// host, port, TLS mode, credentials (the password sealed) and sender. Set,
// it wins over KUBEBYON_SMTP_URL; the Service is the platform's
// mail.Sender and reads the settings at each send, so a change takes
// effect without a restart in every process.
package mailsettings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// TLS modes.
const (
	TLSNone     = "none"
	TLSStartTLS = "starttls"
	// TLSImplicit is TLS from the first byte ("smtps", usually port 465).
	TLSImplicit = "smtps"
)

// TLSModes are the TLS modes in the order the form offers them.
var TLSModes = []string{TLSStartTLS, TLSImplicit, TLSNone}

// Field names, as forms, field errors and audit events use them.
const (
	FieldHost     = "host"
	FieldPort     = "port"
	FieldTLS      = "tls"
	FieldUsername = "username"
	FieldPassword = "smtpPassword"
	FieldFrom     = "from"
)

// Settings is the mail server. Zero (no host) is not set: the platform
// uses KUBEBYON_SMTP_URL, else writes mail to the log.
type Settings struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	TLS      string `json:"tls"`
	Username string `json:"username"`
	Password string `json:"-"`
	// From is the sender address; empty: KUBEBYON_MAIL_FROM (or its
	// default).
	From string `json:"from"`
}

// Set reports whether the settings name a mail server.
func (s Settings) Set() bool { return s.Host != "" }

// empty reports whether no field was filled in (the TLS mode always is,
// as a choice, and does not count).
func (s Settings) empty() bool {
	return s.Host == "" && s.Port == 0 && s.Username == "" && s.Password == "" && s.From == ""
}

// Validate names the bad fields: a host is needed as soon as anything is
// filled in; the port is 1 to 65535; the TLS mode one of TLSModes; a
// password needs a user; the sender is an address.
func (s Settings) Validate() error {
	if s.empty() {
		return nil
	}
	errs := input.Errors{}
	if s.Host == "" {
		errs[FieldHost] = "ErrMailHostRequired"
	} else if strings.ContainsAny(s.Host, " \t/:@?#") && net.ParseIP(s.Host) == nil {
		errs[FieldHost] = "ErrMailHost"
	}
	if s.Port < 1 || s.Port > 65535 {
		errs[FieldPort] = "ErrMailPort"
	}
	if !slices.Contains(TLSModes, s.TLS) {
		errs[FieldTLS] = "ErrMailTLS"
	}
	if s.Password != "" && s.Username == "" {
		errs[FieldUsername] = "ErrMailUsernameRequired"
	}
	if s.From != "" {
		if _, err := netmail.ParseAddress(s.From); err != nil {
			errs[FieldFrom] = "ErrMailFrom"
		}
	}
	for _, f := range []struct{ name, v string }{{FieldHost, s.Host}, {FieldUsername, s.Username}, {FieldFrom, s.From}} {
		if !input.Storable(f.v) || len(f.v) > 500 {
			errs[f.name] = input.ErrUnstorable
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// URL is the settings as a KUBEBYON_SMTP_URL, for mail.NewSMTP.
func (s Settings) URL() *url.URL {
	u := &url.URL{Scheme: "smtp", Host: net.JoinHostPort(s.Host, strconv.Itoa(s.Port))}
	switch s.TLS {
	case TLSImplicit:
		u.Scheme = "smtps"
	case TLSNone:
		u.RawQuery = "tls=none"
	default:
		u.RawQuery = "tls=starttls"
	}
	if s.Username != "" {
		u.User = url.UserPassword(s.Username, s.Password)
	}
	return u
}

// Server is host:port, for people.
func (s Settings) Server() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// stored is Settings as they sit in the settings table: the password
// sealed.
type stored struct {
	Settings
	PasswordSealed string `json:"passwordSealed,omitempty"`
}

const settingsKey = "mail"

// ErrUnreadable says the stored password was sealed with another
// KUBEBYON_SECRET_KEY. Load returns it with the rest of the settings (the
// password empty), so the page can say so and take a new one.
var ErrUnreadable = errors.New("mail settings: the SMTP password was sealed with another KUBEBYON_SECRET_KEY: restore that key, or enter the password again in the admin mail settings")

// Load reads the mail settings; zero when never saved.
func Load(ctx context.Context, q *queries.Queries, box *secrets.Box) (Settings, error) {
	row, err := q.SettingGet(ctx, settingsKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return Settings{}, nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("load mail settings: %w", err)
	}
	var st stored
	if err := json.Unmarshal(row.Value, &st); err != nil {
		return Settings{}, fmt.Errorf("decode mail settings: %w", err)
	}
	if st.PasswordSealed != "" {
		b, err := box.Open(st.PasswordSealed)
		if err != nil {
			return st.Settings, ErrUnreadable
		}
		st.Password = string(b)
	}
	return st.Settings, nil
}

// save stores s (validated) with q, the transaction's.
func save(ctx context.Context, q *queries.Queries, box *secrets.Box, s Settings) error {
	st := stored{Settings: s}
	if s.Password != "" {
		st.PasswordSealed = box.Seal([]byte(s.Password))
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode mail settings: %w", err)
	}
	if err := q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: settingsKey, Value: b, Secret: true}); err != nil {
		return fmt.Errorf("store mail settings: %w", err)
	}
	return nil
}

// diff names the fields that differ, by their JSON names (the password as
// FieldPassword), sorted.
func diff(a, b Settings) ([]string, error) {
	changed, err := audit.Changed(a, b)
	if err != nil {
		return nil, err
	}
	if a.Password != b.Password {
		changed = append(changed, FieldPassword)
	}
	slices.Sort(changed)
	return changed, nil
}
