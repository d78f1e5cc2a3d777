package dnsrecords

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"k8s.io/client-go/dynamic"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// Interval paces the per-cluster DNS check (checks.DNSRecord): due when
// a cluster is created or deleted and when the DNS settings change, then
// every Interval while the platform writes the cluster's record, so that
// a record changed or removed behind its back is put back.
const Interval = 15 * time.Minute

// SyncArgs converges one cluster's DNS record (worked by
// jobs.DNSRecordWorker, queued when its check is due).
type SyncArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (SyncArgs) Kind() string { return "dns_record" }

// InsertOpts implements river.JobArgsWithInsertOpts: the check comes due
// again (sooner while it fails), so a failed one is not retried by River.
func (SyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: checks.Queue, MaxAttempts: 1, UniqueOpts: checks.UniqueWhileWaiting()}
}

// The states of a cluster's record (cluster_dns.state).
const (
	StatePublished = "published"
	StateRemoved   = "removed"
	StateError     = "error"
)

// Action is the audit action of a DNS settings change, CheckAction that
// of a check of the settings.
const (
	Action      = "admin.dns_update"
	CheckAction = "admin.dns_check"
)

// Service carries what DNS needs: the database, the platform key (the
// TSIG secret is sealed), and KUBEBYON_KUBECONFIG for the host cluster
// (external-dns mode).
type Service struct {
	Pool           *pgxpool.Pool
	Box            *secrets.Box
	KubeconfigPath string
}

// Settings loads the DNS settings.
func (s *Service) Settings(ctx context.Context) (Settings, error) {
	return Load(ctx, queries.New(s.Pool), s.Box)
}

// Change is a submitted DNS settings form. KeySecret empty keeps the
// stored secret; a new one needs the admin's Password.
type Change struct {
	Settings  Settings
	KeySecret string
	Password  string
}

// ErrPasswordRequired: the TSIG secret changes and no password was given
// (a catalog message ID).
var ErrPasswordRequired = errors.New("ErrDNSPasswordRequired")

// Apply stores the change on behalf of the admin actor.UserID with its
// audit event, and makes every cluster's check due so that the records
// follow. It returns the names of the fields that changed (none: nothing
// was written). Errors: input.Errors, ErrPasswordRequired, and
// adminauth's ErrWrongPassword, *LimitedError and ErrNotAdmin.
func (s *Service) Apply(ctx context.Context, c Change, actor audit.Actor) ([]string, error) {
	q := queries.New(s.Pool)
	current, err := Load(ctx, q, s.Box)
	if err != nil && !errors.Is(err, ErrUnreadable) {
		return nil, err
	}
	unreadable := errors.Is(err, ErrUnreadable)
	rt, err := settings.Load(ctx, q, s.Box)
	if err != nil {
		return nil, err
	}
	next := c.Settings
	next.Addresses = normalAddresses(next.Addresses)
	next.KeySecret = current.KeySecret
	if c.KeySecret != "" {
		next.KeySecret = strings.TrimSpace(c.KeySecret)
	}
	if err := next.Validate(rt.APIBaseDomain); err != nil {
		return nil, err
	}
	changed, err := diff(current, next)
	if err != nil {
		return nil, err
	}
	if unreadable && c.KeySecret != "" && !slices.Contains(changed, "keySecret") {
		changed = append(changed, "keySecret")
	}
	if len(changed) == 0 {
		return nil, nil
	}
	confirm := adminauth.Confirm{Needed: slices.Contains(changed, "keySecret"), Password: c.Password, Required: ErrPasswordRequired}
	err = adminauth.SaveSettings(ctx, s.Pool, actor.UserID, settingsKey, confirm, func(q *queries.Queries) error {
		if err := save(ctx, q, s.Box, next); err != nil {
			return err
		}
		if _, err := q.ClusterDNSScheduleAll(ctx, string(checks.DNSRecord)); err != nil {
			return fmt.Errorf("schedule DNS checks: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: Action, TargetType: "settings", TargetID: settingsKey,
			Details: map[string]any{"changed": changed, "mode": next.Mode},
		})
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// normalAddresses trims, drops empties and duplicates, and writes IPv6 in
// its canonical form.
func normalAddresses(in []string) []string {
	var out []string
	for _, a := range in {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if ip, err := netip.ParseAddr(a); err == nil {
			a = ip.Unmap().String()
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// diff names the fields that differ, by their JSON names, sorted; the
// secret as keySecret.
func diff(a, b Settings) ([]string, error) {
	changed, err := audit.Changed(a, b)
	if err != nil {
		return nil, err
	}
	if a.KeySecret != b.KeySecret {
		changed = append(changed, "keySecret")
	}
	slices.Sort(changed)
	return changed, nil
}

// writer is the writer of mode, as the settings describe it; rt names the
// host cluster (external-dns mode).
func (s *Service) writer(set Settings, rt settings.Runtime, mode string) (Writer, error) {
	switch mode {
	case ModeRFC2136:
		return RFC2136From(set), nil
	case ModeExternalDNS:
		cfg, err := rt.HostConfig(s.KubeconfigPath)
		if err != nil {
			return nil, err
		}
		client, err := dynamic.NewForConfig(checks.Bounded(cfg))
		if err != nil {
			return nil, fmt.Errorf("host cluster client: %w", err)
		}
		return &ExternalDNS{Client: client, Namespace: set.Namespace, TTL: int64(set.TTL)}, nil
	}
	return nil, fmt.Errorf("DNS mode %q writes no records", mode)
}

// WriterFor is the writer of the current mode for names under domain
// (nil when the platform writes no records): an RFC 2136 update goes to
// the settings' zone when domain is in it, else to a zone named domain
// (the admin delegated it, with the same key allowed to update it).
func (s *Service) WriterFor(ctx context.Context, domain string) (Writer, error) {
	q := queries.New(s.Pool)
	set, err := Load(ctx, q, s.Box)
	if err != nil {
		return nil, err
	}
	if !set.Managed() {
		return nil, nil
	}
	rt, err := settings.Load(ctx, q, s.Box)
	if err != nil {
		return nil, err
	}
	w, err := s.writer(set, rt, set.Mode)
	if err != nil {
		return nil, err
	}
	if r, ok := w.(*RFC2136); ok {
		zone := strings.TrimSuffix(r.Zone, ".")
		if domain != zone && !strings.HasSuffix(domain, "."+zone) {
			r.Zone = domain
		}
	}
	return w, nil
}

// Sync converges the cluster's record with the settings: it removes a
// record that should no longer be (the cluster is deleted, the mode or
// the name changed), writes the one that should be when the store does
// not hold it, and says so in the cluster's history. It returns when the
// check is next due (zero: idle until something asks). A failure is
// recorded on the cluster and returned as checks.Unreachable, so that the
// check backs off.
func (s *Service) Sync(ctx context.Context, clusterID int64) (time.Time, error) {
	q := queries.New(s.Pool)
	t, err := q.ClusterDNSTarget(ctx, clusterID)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("load cluster %d: %w", clusterID, err)
	}
	next, err := s.sync(ctx, q, clusterID, t)
	if err != nil {
		if ctx.Err() != nil {
			return time.Time{}, err
		}
		if t.State != StateError {
			if eerr := event(ctx, q, clusterID, "warning", "DNSError", err.Error()); eerr != nil {
				return time.Time{}, eerr
			}
		}
		if serr := q.ClusterDNSSetError(ctx, queries.ClusterDNSSetErrorParams{ClusterID: clusterID, Error: input.Truncate(err.Error(), 500)}); serr != nil {
			return time.Time{}, fmt.Errorf("record DNS error of cluster %d: %w", clusterID, serr)
		}
		return time.Time{}, checks.Unreachable(err)
	}
	return next, nil
}

func (s *Service) sync(ctx context.Context, q *queries.Queries, clusterID int64, t queries.ClusterDNSTargetRow) (time.Time, error) {
	set, err := Load(ctx, q, s.Box)
	if err != nil {
		return time.Time{}, err
	}
	rt, err := settings.Load(ctx, q, s.Box)
	if err != nil {
		return time.Time{}, err
	}
	var name string
	if t.Status != "deleted" && set.Managed() && rt.APIBaseDomain != "" {
		name = rt.Endpoint(t.Slug)
	}
	if t.PublishedName != "" && (t.PublishedName != name || t.PublishedMode != set.Mode) {
		w, err := s.writer(set, rt, t.PublishedMode)
		if err != nil {
			return time.Time{}, err
		}
		if err := w.Remove(ctx, t.PublishedName); err != nil {
			return time.Time{}, err
		}
		if err := event(ctx, q, clusterID, "info", "DNSRemoved", t.PublishedName); err != nil {
			return time.Time{}, err
		}
		if err := q.ClusterDNSSave(ctx, queries.ClusterDNSSaveParams{ClusterID: clusterID, Addresses: []string{}, State: StateRemoved}); err != nil {
			return time.Time{}, fmt.Errorf("record DNS of cluster %d: %w", clusterID, err)
		}
		t.PublishedName, t.PublishedAddresses = "", nil
	}
	if name == "" {
		if t.State == StateError {
			// What failed is no longer asked for.
			if err := q.ClusterDNSSave(ctx, queries.ClusterDNSSaveParams{ClusterID: clusterID, Addresses: []string{}, State: StateRemoved}); err != nil {
				return time.Time{}, fmt.Errorf("record DNS of cluster %d: %w", clusterID, err)
			}
		}
		return time.Time{}, nil
	}
	want := set.IPs()
	w, err := s.writer(set, rt, set.Mode)
	if err != nil {
		return time.Time{}, err
	}
	have, err := w.Lookup(ctx, name)
	if err != nil {
		return time.Time{}, err
	}
	wantStrs := strs(want)
	if !slices.Equal(have, want) {
		if err := w.Set(ctx, name, want); err != nil {
			return time.Time{}, err
		}
		reason, msg := "DNSPublished", name+" → "+strings.Join(wantStrs, ", ")
		if t.State == StatePublished && t.PublishedName == name && slices.Equal(t.PublishedAddresses, wantStrs) {
			found := "none"
			if len(have) > 0 {
				found = strings.Join(strs(have), ", ")
			}
			reason, msg = "DNSRestored", fmt.Sprintf("%s: found %s, put back %s", name, found, strings.Join(wantStrs, ", "))
		}
		if err := event(ctx, q, clusterID, "info", reason, msg); err != nil {
			return time.Time{}, err
		}
	}
	if t.State != StatePublished || t.PublishedName != name || t.PublishedMode != set.Mode || !slices.Equal(t.PublishedAddresses, wantStrs) {
		if err := q.ClusterDNSSave(ctx, queries.ClusterDNSSaveParams{
			ClusterID: clusterID, Name: name, Mode: set.Mode, Addresses: wantStrs, State: StatePublished,
		}); err != nil {
			return time.Time{}, fmt.Errorf("record DNS of cluster %d: %w", clusterID, err)
		}
	}
	return time.Now().Add(Interval), nil
}

func strs(addrs []netip.Addr) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}

func event(ctx context.Context, q *queries.Queries, clusterID int64, level, reason, msg string) error {
	if _, err := q.ClusterEventCreate(ctx, queries.ClusterEventCreateParams{
		ClusterID: clusterID, Level: level, Reason: reason, Message: input.Truncate(msg, 500),
	}); err != nil {
		return fmt.Errorf("record event %s of cluster %d: %w", reason, clusterID, err)
	}
	return nil
}

// Schedule makes the cluster's DNS check (checks.DNSRecord) due now, in
// the caller's transaction, as when the cluster is deleted.
func Schedule(ctx context.Context, q *queries.Queries, clusterID int64) error {
	return checks.Schedule(ctx, q, clusterID, checks.DNSRecord, time.Now())
}

// CheckResult is what Check found, for the admin.
type CheckResult struct {
	// OK says the DNS works as the mode needs.
	OK bool
	// Name is the name a wildcard check looked up, and Found what it
	// resolved to.
	Name  string
	Found []string
	// Err says what is wrong, in words.
	Err string
}

// Check checks the stored settings' mode: a wildcard resolves a random
// name under the API base domain to the edge addresses; an RFC 2136
// server answers for the zone and takes the key; the host cluster serves
// DNSEndpoint objects. A check of a mode that has something to check is
// recorded in the audit log (CheckAction), passed or not: the admin
// overview's checklist reads the latest.
func (s *Service) Check(ctx context.Context, actor audit.Actor) (CheckResult, error) {
	res, err := s.check(ctx)
	if err != nil {
		return res, err
	}
	// A single insert: it needs no transaction of its own.
	if err := audit.Record(ctx, queries.New(s.Pool), actor, audit.Event{
		Action: CheckAction, TargetType: "settings", TargetID: settingsKey, Details: map[string]any{"ok": res.OK},
	}); err != nil {
		return res, err
	}
	return res, nil
}

// check is Check without its record.
func (s *Service) check(ctx context.Context) (CheckResult, error) {
	q := queries.New(s.Pool)
	set, err := Load(ctx, q, s.Box)
	if err != nil {
		return CheckResult{Err: err.Error()}, nil
	}
	rt, err := settings.Load(ctx, q, s.Box)
	if err != nil {
		return CheckResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch set.Mode {
	case ModeWildcard:
		return CheckWildcard(ctx, set.Resolver, rt.APIBaseDomain, set.IPs()), nil
	case ModeRFC2136:
		if err := RFC2136From(set).Check(ctx); err != nil {
			return CheckResult{Err: err.Error()}, nil
		}
		return CheckResult{OK: true}, nil
	case ModeExternalDNS:
		w, err := s.writer(set, rt, set.Mode)
		if err == nil {
			err = w.(*ExternalDNS).Check(ctx)
		}
		if err != nil {
			return CheckResult{Err: err.Error()}, nil
		}
		return CheckResult{OK: true}, nil
	}
	return CheckResult{}, input.Errors{"mode": "ErrDNSCheckNone"}
}

// Status is a cluster's record as its page shows it.
type Status struct {
	Mode string
	// Name is the cluster's API host name; empty without an API base
	// domain.
	Name string
	// State is StatePublished, StateError, or StatePending (the platform
	// has yet to write what the settings ask), or the mode itself for
	// ModeNone and ModeWildcard, where the platform writes nothing.
	State     string
	Error     string
	Addresses []string
	Updated   time.Time
}

// StatePending is a record the platform has yet to write as the settings
// ask.
const StatePending = "pending"

// Status tells how the cluster's record stands.
func (s *Service) Status(ctx context.Context, clusterID int64, slug string) (Status, error) {
	q := queries.New(s.Pool)
	set, err := Load(ctx, q, s.Box)
	if err != nil && !errors.Is(err, ErrUnreadable) {
		return Status{}, err
	}
	rt, err := settings.Load(ctx, q, s.Box)
	if err != nil {
		return Status{}, err
	}
	st := Status{Mode: set.Mode, State: set.Mode, Addresses: set.Addresses}
	if rt.APIBaseDomain != "" {
		st.Name = rt.Endpoint(slug)
	}
	if !set.Managed() || st.Name == "" {
		return st, nil
	}
	row, err := q.ClusterDNSGet(ctx, clusterID)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Status{}, fmt.Errorf("load DNS of cluster %d: %w", clusterID, err)
	}
	st.State, st.Updated = StatePending, row.UpdatedAt.Time
	switch {
	case row.State == StateError:
		st.State, st.Error = StateError, row.Error
	case row.State == StatePublished && row.Name == st.Name && row.Mode == set.Mode && slices.Equal(row.Addresses, strs(set.IPs())):
		st.State, st.Addresses = StatePublished, row.Addresses
	}
	return st, nil
}
