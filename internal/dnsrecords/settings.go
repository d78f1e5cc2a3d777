// Package dnsrecords points each cluster's API host name
// (<slug>.<API base domain>) at the public entry. The admin picks how:
// the names are left to a wildcard record the admin keeps (and checks
// here), or the platform writes one record per cluster itself, with RFC
// 2136 dynamic updates signed with TSIG, or as an external-dns DNSEndpoint
// object on the host cluster. The records are desired state in
// PostgreSQL: a per-cluster check (package checks) converges each one,
// puts back a record that drifted, and removes it when the cluster is
// deleted.
package dnsrecords

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// The DNS modes.
const (
	// ModeNone: the platform does nothing about DNS.
	ModeNone = "none"
	// ModeWildcard: the admin keeps *.<API base domain> pointing at the
	// edge addresses.
	ModeWildcard = "wildcard"
	// ModeRFC2136: the platform writes each cluster's A/AAAA records with
	// dynamic updates.
	ModeRFC2136 = "rfc2136"
	// ModeExternalDNS: the platform writes a DNSEndpoint per cluster for
	// an external-dns on the host cluster.
	ModeExternalDNS = "external-dns"
)

// Modes are the DNS modes, in the order forms list them.
var Modes = []string{ModeNone, ModeWildcard, ModeRFC2136, ModeExternalDNS}

// Algorithms are the TSIG algorithms a key may use.
var Algorithms = []string{"hmac-sha256", "hmac-sha512", "hmac-sha384", "hmac-sha224", "hmac-sha1"}

// Settings are the admin's DNS settings.
type Settings struct {
	Mode string `json:"mode"`
	// Addresses are the edge's public addresses (IPv4 and IPv6): what
	// every API host name resolves to.
	Addresses []string `json:"addresses"`
	// Resolver is the DNS server (host:port) the check asks; empty: the
	// system's resolver.
	Resolver string `json:"resolver"`
	// RFC 2136: the primary server (host:port), the zone the names are
	// in, and the TSIG key (its secret is sealed when stored).
	Server       string `json:"server"`
	Zone         string `json:"zone"`
	KeyName      string `json:"keyName"`
	KeyAlgorithm string `json:"keyAlgorithm"`
	KeySecret    string `json:"-"`
	// TTL of the records written, in seconds.
	TTL int `json:"ttl"`
	// Namespace on the host cluster where the DNSEndpoint objects go.
	Namespace string `json:"namespace"`
}

// Defaults are the settings before an admin changes anything.
func Defaults() Settings {
	return Settings{Mode: ModeNone, KeyAlgorithm: "hmac-sha256", TTL: 60, Namespace: "kubebyon-dns"}
}

// Managed reports whether the platform writes the records itself.
func (s Settings) Managed() bool { return s.Mode == ModeRFC2136 || s.Mode == ModeExternalDNS }

// IPs are the parsed Addresses (Validate has checked them).
func (s Settings) IPs() []netip.Addr {
	var out []netip.Addr
	for _, a := range s.Addresses {
		if ip, err := netip.ParseAddr(a); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	return sortAddrs(out)
}

func sortAddrs(a []netip.Addr) []netip.Addr {
	slices.SortFunc(a, func(x, y netip.Addr) int { return x.Compare(y) })
	return slices.Compact(a)
}

type stored struct {
	Settings
	KeySecretSealed string `json:"keySecretSealed,omitempty"`
}

const settingsKey = "dns"

// Load reads the settings, filling defaults for what was never set. A
// secret the platform key cannot open reads as empty, with ErrUnreadable.
func Load(ctx context.Context, q *queries.Queries, box *secrets.Box) (Settings, error) {
	row, err := q.SettingGet(ctx, settingsKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return Defaults(), nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("load DNS settings: %w", err)
	}
	s := stored{Settings: Defaults()}
	if err := json.Unmarshal(row.Value, &s); err != nil {
		return Settings{}, fmt.Errorf("decode DNS settings: %w", err)
	}
	if s.KeySecretSealed != "" {
		b, err := box.Open(s.KeySecretSealed)
		if err != nil {
			return s.Settings, ErrUnreadable
		}
		s.KeySecret = string(b)
	}
	return s.Settings, nil
}

// ErrUnreadable says the stored TSIG secret was sealed with another
// KUBEBYON_SECRET_KEY.
var ErrUnreadable = errors.New("the DNS key's secret was sealed with another KUBEBYON_SECRET_KEY: restore that key, or enter the secret again")

// Store stores the settings as they are, its secret sealed (q should be
// the transaction that also writes the audit event): the admin's change
// goes through Service.Apply, which checks it and asks for a password.
func Store(ctx context.Context, q *queries.Queries, box *secrets.Box, s Settings) error {
	return save(ctx, q, box, s)
}

// save stores the settings (q should be the transaction that also writes
// the audit event).
func save(ctx context.Context, q *queries.Queries, box *secrets.Box, s Settings) error {
	st := stored{Settings: s}
	if s.KeySecret != "" {
		st.KeySecretSealed = box.Seal([]byte(s.KeySecret))
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode DNS settings: %w", err)
	}
	if err := q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: settingsKey, Value: b, Secret: true}); err != nil {
		return fmt.Errorf("store DNS settings: %w", err)
	}
	return nil
}

// Validate checks every field the mode uses (catalog message IDs by field
// name), given the API base domain the names are under.
func (s *Settings) Validate(apiBaseDomain string) error {
	errs := input.Errors{}
	if !slices.Contains(Modes, s.Mode) {
		errs["mode"] = "ErrDNSMode"
	}
	for _, a := range s.Addresses {
		if ip, err := netip.ParseAddr(a); err != nil || ip.Zone() != "" || ip.IsUnspecified() {
			errs["addresses"] = "ErrDNSAddresses"
		}
	}
	if s.Mode != ModeNone {
		if len(s.Addresses) == 0 {
			errs["addresses"] = "ErrDNSAddressesRequired"
		}
		if apiBaseDomain == "" {
			errs["mode"] = "ErrDNSNoBaseDomain"
		}
	}
	if s.Resolver != "" && !validHostPort(s.Resolver) {
		errs["resolver"] = "ErrDNSHostPort"
	}
	if s.TTL < 1 || s.TTL > 86400 {
		errs["ttl"] = "ErrDNSTTL"
	}
	switch s.Mode {
	case ModeRFC2136:
		if !validHostPort(s.Server) {
			errs["server"] = "ErrDNSHostPort"
		}
		zone := strings.TrimSuffix(s.Zone, ".")
		switch {
		case len(validation.IsDNS1123Subdomain(zone)) > 0:
			errs["zone"] = "ErrDNSZone"
		case apiBaseDomain != "" && apiBaseDomain != zone && !strings.HasSuffix(apiBaseDomain, "."+zone):
			errs["zone"] = "ErrDNSZoneOutside"
		}
		if len(validation.IsDNS1123Subdomain(strings.TrimSuffix(s.KeyName, "."))) > 0 {
			errs["keyName"] = "ErrDNSKeyName"
		}
		if !slices.Contains(Algorithms, s.KeyAlgorithm) {
			errs["keyAlgorithm"] = "ErrDNSKeyAlgorithm"
		}
		if b, err := base64.StdEncoding.DecodeString(s.KeySecret); err != nil || len(b) == 0 {
			errs["keySecret"] = "ErrDNSKeySecret"
		}
	case ModeExternalDNS:
		if len(validation.IsDNS1123Label(s.Namespace)) > 0 {
			errs["namespace"] = "ErrDNSNamespace"
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// validHostPort accepts host:port with a port number.
func validHostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || strings.ContainsAny(host, " /") {
		return false
	}
	p, err := net.LookupPort("udp", port)
	return err == nil && p > 0
}
