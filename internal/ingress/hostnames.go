package ingress

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/entitlements"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// MaxHostnames bounds the host names of one cluster.
const MaxHostnames = 50

// The states of a host name (cluster_hostnames.state).
const (
	HostnamePending  = "pending"
	HostnameVerified = "verified"
	HostnameWrong    = "wrong"
	HostnameError    = "error"
)

// Errors users see (catalog message IDs).
var (
	ErrHostnameInvalid  = errors.New("ErrHostnameInvalid")
	ErrHostnameTaken    = errors.New("ErrHostnameTaken")
	ErrHostnameReserved = errors.New("ErrHostnameReserved")
	ErrHostnameTooMany  = errors.New("ErrHostnameTooMany")
	ErrHostnameNotFound = errors.New("ErrHostnameNotFound")
	ErrIngressOff       = errors.New("ErrIngressOff")
)

// The host names' check: a per-cluster check (checks.IngressHostnames)
// that writes the CNAMEs of the names under the apps base domain (and
// puts them back), verifies the others, and takes out the CNAMEs of
// removed names.
const (
	// HostnamesInterval is how often verified names are checked again;
	// HostnamesPendingInterval how often names not yet verified are.
	HostnamesInterval        = 30 * time.Minute
	HostnamesPendingInterval = 2 * time.Minute
)

// HostnamesArgs checks one cluster's host names (worked by
// jobs.IngressHostnamesWorker, queued when its check is due).
type HostnamesArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (HostnamesArgs) Kind() string { return "ingress_hostnames" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (HostnamesArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: checks.Queue, MaxAttempts: 1, UniqueOpts: checks.UniqueWhileWaiting()}
}

// Hostname is a bound host name as the pages and the API show it.
type Hostname struct {
	Name string
	// Managed: under the apps base domain, the platform writes its CNAME.
	Managed bool
	// State is one of the Hostname states; Resolved what the name
	// resolves to when it is wrong; Error why the check could not tell.
	State, Resolved, Error string
	Checked                time.Time
	// Cert is its certificate's state (the Cert constants; "" none yet),
	// CertNotAfter its expiry, CertError cert-manager's last word.
	Cert, CertError string
	CertNotAfter    time.Time
	// EdgeStatus is what the Gateway's implementation says of its routes
	// through the platform edge: "" none, "ok", or why not, in words.
	EdgeStatus string
}

func hostnameOf(r queries.ClusterHostname) Hostname {
	return Hostname{
		Name: r.Name, Managed: r.Managed, State: r.State, Resolved: r.Resolved, Error: r.Error, Checked: r.CheckedAt.Time,
		Cert: r.CertState, CertError: r.CertError, CertNotAfter: r.CertNotAfter.Time, EdgeStatus: r.EdgeStatus,
	}
}

// Hostnames lists the cluster's bound host names, by name.
func (s *Service) Hostnames(ctx context.Context, clusterID int64) ([]Hostname, error) {
	rows, err := queries.New(s.Pool).HostnameListByCluster(ctx, clusterID)
	if err != nil {
		return nil, fmt.Errorf("list host names: %w", err)
	}
	return hostnamesOf(rows), nil
}

func hostnamesOf(rows []queries.ClusterHostname) []Hostname {
	out := make([]Hostname, len(rows))
	for i, r := range rows {
		out[i] = hostnameOf(r)
	}
	return out
}

// HostnamePage is up to n of the cluster's bound host names, by name,
// after the name after ("" from the first).
func (s *Service) HostnamePage(ctx context.Context, clusterID int64, after string, n int32) ([]Hostname, error) {
	rows, err := queries.New(s.Pool).HostnamePageByCluster(ctx, queries.HostnamePageByClusterParams{ClusterID: clusterID, After: after, RowLimit: n})
	if err != nil {
		return nil, fmt.Errorf("list host names: %w", err)
	}
	return hostnamesOf(rows), nil
}

// NormalHostname is name as it is stored: trimmed, lower-case, without
// the root's dot.
func NormalHostname(name string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
}

// AddHostname binds a host name to the cluster, whose managed ingress must
// be on. A name already bound to any cluster on the platform is
// ErrHostnameTaken; names the platform uses itself (the API and console
// names, the clusters' CNAME targets) are ErrHostnameReserved.
func (s *Service) AddHostname(ctx context.Context, c queries.Cluster, name string, actor audit.Actor) (Hostname, error) {
	name = NormalHostname(name)
	if len(validation.IsDNS1123Subdomain(name)) > 0 || !strings.Contains(name, ".") || strings.HasPrefix(name, "*") {
		return Hostname{}, input.Errors{"name": ErrHostnameInvalid.Error()}
	}
	// An address is no host name: certificates and CNAMEs need names.
	if _, err := netip.ParseAddr(name); err == nil {
		return Hostname{}, input.Errors{"name": ErrHostnameInvalid.Error()}
	}
	q := queries.New(s.Pool)
	st, err := LoadSettings(ctx, q)
	if err != nil {
		return Hostname{}, err
	}
	rt, err := settings.Load(ctx, q, s.Box)
	if err != nil {
		return Hostname{}, err
	}
	if reserved, err := s.reserved(ctx, q, st, rt, name); err != nil || reserved {
		if err == nil {
			err = input.Errors{"name": ErrHostnameReserved.Error()}
		}
		return Hostname{}, err
	}
	managed := st.AppsBaseDomain != "" && strings.HasSuffix(name, "."+st.AppsBaseDomain)
	var out Hostname
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		locked, err := q.ClusterLock(ctx, c.ID)
		if err != nil {
			return fmt.Errorf("lock cluster: %w", err)
		}
		if locked.DeleteRequestedAt.Valid {
			return clusters.ErrDeleting
		}
		row, err := q.IngressGet(ctx, c.ID)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && !row.Enabled) {
			return ErrIngressOff
		}
		if err != nil {
			return fmt.Errorf("load managed ingress: %w", err)
		}
		n, err := q.HostnameCountByCluster(ctx, c.ID)
		if err != nil {
			return fmt.Errorf("count host names: %w", err)
		}
		if n >= MaxHostnames {
			return ErrHostnameTooMany
		}
		ent, err := entitlements.For(ctx, q, c.OrgID)
		if err != nil {
			return err
		}
		if err := ent.Hostname(n); err != nil {
			return err
		}
		h, err := q.HostnameCreate(ctx, queries.HostnameCreateParams{ClusterID: c.ID, Name: name, Managed: managed})
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return input.Errors{"name": ErrHostnameTaken.Error()}
		}
		if err != nil {
			return fmt.Errorf("bind host name: %w", err)
		}
		out = hostnameOf(h)
		if err := clusterEvent(ctx, q, c.ID, "info", "HostnameBound", name); err != nil {
			return err
		}
		if err := audit.Record(ctx, q, actor, audit.Event{
			Action: "cluster.hostname_add", TargetType: "cluster", TargetID: fmt.Sprint(c.ID),
			Details: map[string]any{"cluster": c.Name, "hostname": name},
		}); err != nil {
			return err
		}
		if err := ScheduleEdge(ctx, q, c.ID); err != nil {
			return err
		}
		return checks.Schedule(ctx, q, c.ID, checks.IngressHostnames, time.Now())
	})
	return out, err
}

// reserved reports whether the platform uses name itself: the API names
// and everything under their domain, the console's and the platform's
// own names, a name that is (or could be) a cluster's CNAME target, and
// any name deeper under the apps base domain (under a CNAME target: the
// platform's names there are one label).
func (s *Service) reserved(ctx context.Context, q *queries.Queries, st Settings, rt settings.Runtime, name string) (bool, error) {
	if rt.APIBaseDomain != "" && (name == rt.APIBaseDomain || strings.HasSuffix(name, "."+rt.APIBaseDomain)) {
		return true, nil
	}
	if rt.ConsoleHost != "" && name == strings.ToLower(rt.ConsoleHost) {
		return true, nil
	}
	if s.PlatformHost != "" && name == NormalHostname(s.PlatformHost) {
		return true, nil
	}
	if st.AppsBaseDomain == "" {
		return false, nil
	}
	if name == st.AppsBaseDomain {
		return true, nil
	}
	if rest, ok := strings.CutSuffix(name, "."+st.AppsBaseDomain); ok && strings.Contains(rest, ".") {
		return true, nil
	}
	if first, rest, _ := strings.Cut(name, "."); rest == st.AppsBaseDomain {
		taken, err := q.ClusterSlugExists(ctx, first)
		if err != nil {
			return false, fmt.Errorf("look up cluster slugs: %w", err)
		}
		return taken, nil
	}
	return false, nil
}

// RemoveHostname unbinds a host name of the cluster; its check takes out
// the CNAME the platform wrote for it.
func (s *Service) RemoveHostname(ctx context.Context, c queries.Cluster, name string, actor audit.Actor) error {
	name = NormalHostname(name)
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if _, err := q.HostnameMarkDeleted(ctx, queries.HostnameMarkDeletedParams{ClusterID: c.ID, Name: name}); errors.Is(err, pgx.ErrNoRows) {
			return ErrHostnameNotFound
		} else if err != nil {
			return fmt.Errorf("unbind host name: %w", err)
		}
		if err := clusterEvent(ctx, q, c.ID, "info", "HostnameUnbound", name); err != nil {
			return err
		}
		if err := audit.Record(ctx, q, actor, audit.Event{
			Action: "cluster.hostname_remove", TargetType: "cluster", TargetID: fmt.Sprint(c.ID),
			Details: map[string]any{"cluster": c.Name, "hostname": name},
		}); err != nil {
			return err
		}
		if err := ScheduleEdge(ctx, q, c.ID); err != nil {
			return err
		}
		return checks.Schedule(ctx, q, c.ID, checks.IngressHostnames, time.Now())
	})
}

// CheckHostnames converges the cluster's host names: the CNAMEs of the
// managed names written (and put back: the history says "recovered"),
// the others resolved and marked verified, pending or wrong, the CNAMEs
// of removed names taken out. It returns when the check is next due (zero:
// no names left). A DNS server that does not answer is
// checks.Unreachable, so that the check backs off.
func (s *Service) CheckHostnames(ctx context.Context, clusterID int64) (time.Time, error) {
	q := queries.New(s.Pool)
	rows, err := q.HostnameListForCheck(ctx, clusterID)
	if err != nil {
		return time.Time{}, fmt.Errorf("list host names of cluster %d: %w", clusterID, err)
	}
	if len(rows) == 0 {
		return time.Time{}, nil
	}
	c, err := q.ClusterGetByID(ctx, clusterID)
	if err != nil {
		return time.Time{}, fmt.Errorf("load cluster %d: %w", clusterID, err)
	}
	if c.Status == "deleted" || c.DeleteRequestedAt.Valid {
		// Going with the cluster: every name is released.
		if err := q.HostnameMarkAllDeleted(ctx, clusterID); err != nil {
			return time.Time{}, fmt.Errorf("release host names of cluster %d: %w", clusterID, err)
		}
		if rows, err = q.HostnameListForCheck(ctx, clusterID); err != nil {
			return time.Time{}, fmt.Errorf("list host names of cluster %d: %w", clusterID, err)
		}
	}
	st, err := LoadSettings(ctx, q)
	if err != nil {
		return time.Time{}, err
	}
	dnsSet, err := s.DNS.Settings(ctx)
	if err != nil && !errors.Is(err, dnsrecords.ErrUnreadable) {
		return time.Time{}, err
	}
	target := st.CNAMETarget(c.Slug)
	var writer dnsrecords.Writer
	if st.AppsBaseDomain != "" {
		if writer, err = s.DNS.WriterFor(ctx, st.AppsBaseDomain); err != nil {
			return time.Time{}, checks.Unreachable(err)
		}
	}
	cnames, _ := writer.(dnsrecords.CNAMEWriter)
	ingressRow, err := q.IngressGet(ctx, clusterID)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, fmt.Errorf("load managed ingress: %w", err)
	}
	next := time.Now().Add(HostnamesInterval)
	var failed error
	live := 0
	for _, r := range rows {
		if r.DeletedAt.Valid {
			if err := s.release(ctx, q, r, cnames); err != nil {
				failed = err
			}
			continue
		}
		live++
		state, resolved, err := s.checkHostname(ctx, q, c, r, target, cnames, dnsSet.Resolver, ingressRow.DnsAddresses)
		errText := ""
		if err != nil {
			state, errText, failed = HostnameError, input.Truncate(err.Error(), 500), err
		}
		if state != r.State {
			reason := map[string]string{HostnameVerified: "HostnameVerified", HostnameWrong: "HostnameWrong", HostnameError: "HostnameError", HostnamePending: "HostnamePending"}[state]
			msg := r.Name
			if state == HostnameWrong {
				msg += ": " + resolved
			}
			if err := clusterEvent(ctx, q, clusterID, "info", reason, msg); err != nil {
				return time.Time{}, err
			}
			switch {
			case state == HostnameVerified:
				err = s.tell(ctx, c, notify.Hostname, notify.EmailHostnameVerified, map[string]any{"Hostname": r.Name})
			case r.State == HostnameVerified && (state == HostnameWrong || state == HostnamePending):
				err = s.tell(ctx, c, notify.Hostname, notify.EmailHostnameBroken, map[string]any{"Hostname": r.Name, "Resolved": resolvedOrNothing(resolved), "Target": target})
			}
			if err != nil {
				return time.Time{}, err
			}
		}
		if err := q.HostnameSetState(ctx, queries.HostnameSetStateParams{ID: r.ID, State: state, Resolved: input.Truncate(resolved, 500), Error: errText}); err != nil {
			return time.Time{}, fmt.Errorf("record host name %s: %w", r.Name, err)
		}
		if state != HostnameVerified {
			next = time.Now().Add(HostnamesPendingInterval)
		}
	}
	if failed != nil {
		return time.Time{}, checks.Unreachable(failed)
	}
	if live == 0 {
		return time.Time{}, nil
	}
	if ingressRow.Status == StatusReady && c.Status == "ready" && s.Virtual != nil {
		issuing, err := s.syncCertificates(ctx, q, c, cmp.Or(ingressRow.Controller, st.Controller))
		if err != nil {
			return time.Time{}, checks.Unreachable(err)
		}
		if issuing {
			next = time.Now().Add(HostnamesPendingInterval)
		}
	}
	return next, nil
}

// syncCertificates makes a certificate for each verified host name of the
// cluster and records where each stands; it reports whether one is not
// ready yet.
func (s *Service) syncCertificates(ctx context.Context, q *queries.Queries, c queries.Cluster, controller string) (bool, error) {
	rows, err := q.HostnameListByCluster(ctx, c.ID)
	if err != nil {
		return false, fmt.Errorf("list host names of cluster %d: %w", c.ID, err)
	}
	var verified []string
	for _, r := range rows {
		if r.State == HostnameVerified {
			verified = append(verified, r.Name)
		}
	}
	cfg, err := s.Virtual(ctx, c)
	if err != nil {
		return false, fmt.Errorf("reach the control plane: %w", err)
	}
	dyn, err := dynamic.NewForConfig(checks.Bounded(cfg))
	if err != nil {
		return false, fmt.Errorf("virtual cluster client: %w", err)
	}
	status, err := SyncCertificates(ctx, dyn, verified, controller)
	if err != nil {
		return false, err
	}
	issuing := false
	for _, r := range rows {
		cs, ok := status[r.Name]
		if !ok {
			cs = CertStatus{}
		}
		if cs.State != "" && cs.State != CertReady {
			issuing = true
		}
		if cs.State == CertReady && !cs.NotAfter.IsZero() && time.Until(cs.NotAfter) < CertExpiryWarning {
			// cert-manager renews a month ahead: one this close failed to.
			n, err := q.HostnameClaimExpiryWarning(ctx, queries.HostnameClaimExpiryWarningParams{ID: r.ID, NotAfter: pgtype.Timestamptz{Time: cs.NotAfter, Valid: true}})
			if err != nil {
				return false, fmt.Errorf("claim the expiry warning of %s: %w", r.Name, err)
			}
			if n > 0 {
				if err := s.tell(ctx, c, notify.Certificate, notify.EmailCertificateExpiring, map[string]any{"Hostname": r.Name, "Expiry": cs.NotAfter.UTC().Format(time.RFC1123)}); err != nil {
					return false, err
				}
			}
		}
		if cs.State == r.CertState && cs.Error == r.CertError && cs.NotAfter.Equal(r.CertNotAfter.Time) {
			continue
		}
		if cs.State != r.CertState && (cs.State == CertReady || cs.State == CertError) {
			reason, msg := "CertificateReady", r.Name
			if cs.State == CertError {
				reason, msg = "CertificateFailed", r.Name+": "+cs.Error
				if err := s.tell(ctx, c, notify.Certificate, notify.EmailCertificateFailed, map[string]any{"Hostname": r.Name, "Reason": cs.Error}); err != nil {
					return false, err
				}
			}
			if err := clusterEvent(ctx, q, c.ID, "info", reason, msg); err != nil {
				return false, err
			}
		}
		if err := q.HostnameSetCert(ctx, queries.HostnameSetCertParams{
			ID: r.ID, CertState: cs.State, CertError: input.Truncate(cs.Error, 500),
			CertNotAfter: pgtype.Timestamptz{Time: cs.NotAfter, Valid: !cs.NotAfter.IsZero()},
		}); err != nil {
			return false, fmt.Errorf("record the certificate of %s: %w", r.Name, err)
		}
	}
	return issuing, nil
}

// checkHostname is one live name's state: a managed name's CNAME is
// written when it is not what it should be; any other name is resolved.
func (s *Service) checkHostname(ctx context.Context, q *queries.Queries, c queries.Cluster, r queries.ClusterHostname, target string, cnames dnsrecords.CNAMEWriter, resolver string, targetAddrs []string) (state, resolved string, err error) {
	if r.Managed && cnames != nil && target != "" {
		have, err := cnames.LookupCNAME(ctx, r.Name)
		if err != nil {
			return "", "", err
		}
		if have != target {
			if err := cnames.SetCNAME(ctx, r.Name, target); err != nil {
				return "", "", err
			}
			if r.State == HostnameVerified {
				found := have
				if found == "" {
					found = "nothing"
				}
				if err := clusterEvent(ctx, q, c.ID, "info", "HostnameRecovered", fmt.Sprintf("%s: found %s, put back %s", r.Name, found, target)); err != nil {
					return "", "", err
				}
			}
		}
		return HostnameVerified, "", nil
	}
	res, err := dnsrecords.Resolve(ctx, resolver, r.Name)
	if err != nil {
		return "", "", err
	}
	switch {
	case target != "" && slices.Contains(res.Aliases, target):
		return HostnameVerified, "", nil
	case len(res.Aliases) == 0 && len(res.Addrs) == 0:
		return HostnamePending, "", nil
	case len(res.Aliases) == 0 && len(targetAddrs) > 0 && subset(res.Addrs, targetAddrs):
		// An apex name cannot have a CNAME: its addresses are the
		// target's.
		return HostnameVerified, "", nil
	}
	return HostnameWrong, res.String(), nil
}

func subset(addrs []netip.Addr, of []string) bool {
	for _, a := range addrs {
		if !slices.Contains(of, a.String()) {
			return false
		}
	}
	return true
}

// release takes out a removed name's CNAME, unless another binding of the
// same name now owns it, then forgets the row.
func (s *Service) release(ctx context.Context, q *queries.Queries, r queries.ClusterHostname, cnames dnsrecords.CNAMEWriter) error {
	if r.Managed && cnames != nil {
		elsewhere, err := q.HostnameLiveElsewhere(ctx, queries.HostnameLiveElsewhereParams{Name: r.Name, ID: r.ID})
		if err != nil {
			return fmt.Errorf("look up host name %s: %w", r.Name, err)
		}
		if !elsewhere {
			if err := cnames.RemoveCNAME(ctx, r.Name); err != nil {
				return err
			}
		}
	}
	if err := q.HostnamePurge(ctx, r.ID); err != nil {
		return fmt.Errorf("forget host name %s: %w", r.Name, err)
	}
	return nil
}

// RunHostnamesCheck is one run of the cluster's host names check, paced
// as checks are: again in HostnamesInterval (sooner while a name is not
// verified), backing off while DNS does not answer. The check job and the
// page's Check now run it.
func (s *Service) RunHostnamesCheck(ctx context.Context, clusterID int64, log *checks.Transitions) error {
	next, err := s.CheckHostnames(ctx, clusterID)
	rec := checks.Recorder{Q: queries.New(s.Pool), Log: log}
	return rec.Done(ctx, clusterID, checks.IngressHostnames, HostnamesPendingInterval, next, err)
}

// CertExpiryWarning is how close to its expiry a certificate that was not
// renewed is told to its owner.
const CertExpiryWarning = 14 * 24 * time.Hour

func resolvedOrNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// tell tells the cluster's organization of kind (notify.TellCluster).
func (s *Service) tell(ctx context.Context, c queries.Cluster, kind notify.Kind, template string, data map[string]any) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		_, err := notify.Notices{Box: s.Box, River: s.River}.TellCluster(ctx, tx, c, kind, template, data)
		return err
	})
}
