package ingress

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/queries"
)

// The CNAME target's records: a per-cluster check (checks.IngressDNS)
// converges them with the cluster's Ready ingress nodes. The health job
// makes it due as soon as the recorded nodes say otherwise than what was
// published; it also runs every DNSInterval to put back a record changed
// behind the platform's back.
const DNSInterval = 15 * time.Minute

// DNSArgs converges one cluster's CNAME target records (worked by
// jobs.IngressDNSWorker, queued when its check is due).
type DNSArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (DNSArgs) Kind() string { return "ingress_dns" }

// InsertOpts implements river.JobArgsWithInsertOpts: the check comes due
// again (sooner while it fails), so River does not retry it.
func (DNSArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: checks.Queue, MaxAttempts: 1, UniqueOpts: checks.UniqueWhileWaiting()}
}

// The states of a CNAME target's records (cluster_ingress.dns_state).
const (
	DNSPublished = "published"
	DNSRemoved   = "removed"
	// DNSUnmanaged: the platform writes no records (DNS mode none or
	// wildcard); the page says which addresses the name should have.
	DNSUnmanaged = "unmanaged"
	DNSError     = "error"
)

// SyncDNS converges the cluster's CNAME target with its nodes: the
// addresses of its Ready ingress nodes while managed ingress is on, no
// record otherwise; each change goes in the cluster's history. It returns
// when the check is next due (zero: idle until asked). A failure is
// recorded and returned as checks.Unreachable, so that the check backs
// off.
func (s *Service) SyncDNS(ctx context.Context, clusterID int64) (time.Time, error) {
	return s.check(ctx, clusterID, "IngressDNSError", s.syncDNS,
		func(row queries.ClusterIngress) bool { return row.DnsState == DNSError },
		func(ctx context.Context, q *queries.Queries, row queries.ClusterIngress, cause error) error {
			return q.IngressDNSSetError(ctx, queries.IngressDNSSetErrorParams{ClusterID: row.ClusterID, Error: input.Truncate(cause.Error(), 500)})
		})
}

// check runs one of a cluster's managed ingress checks: sync on its row
// (no row: nothing to do). A failure is told once in the cluster's
// history as a warning (reason) while failed says the row does not say
// so already, written to the row (record), and returned as
// checks.Unreachable, so that the check backs off.
func (s *Service) check(ctx context.Context, clusterID int64, reason string,
	sync func(context.Context, *queries.Queries, queries.ClusterIngress) (time.Time, error),
	failed func(queries.ClusterIngress) bool,
	record func(context.Context, *queries.Queries, queries.ClusterIngress, error) error,
) (time.Time, error) {
	q := queries.New(s.Pool)
	row, err := q.IngressGet(ctx, clusterID)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("load managed ingress of cluster %d: %w", clusterID, err)
	}
	next, err := sync(ctx, q, row)
	if err == nil || ctx.Err() != nil {
		return next, err
	}
	if !failed(row) {
		if eerr := clusterEvent(ctx, q, clusterID, "warning", reason, err.Error()); eerr != nil {
			return time.Time{}, eerr
		}
	}
	if rerr := record(ctx, q, row, err); rerr != nil {
		return time.Time{}, fmt.Errorf("record the failure of cluster %d (%s): %w", clusterID, err, rerr)
	}
	return time.Time{}, checks.Unreachable(err)
}

func (s *Service) syncDNS(ctx context.Context, q *queries.Queries, row queries.ClusterIngress) (time.Time, error) {
	c, err := q.ClusterGetByID(ctx, row.ClusterID)
	if err != nil {
		return time.Time{}, fmt.Errorf("load cluster %d: %w", row.ClusterID, err)
	}
	st, err := LoadSettings(ctx, q)
	if err != nil {
		return time.Time{}, err
	}
	var name string
	if row.Enabled && c.Status != "deleted" && !c.DeleteRequestedAt.Valid {
		name = st.CNAMETarget(c.Slug)
	}
	// What was published under another name (or while on) goes first.
	if row.DnsName != "" && row.DnsName != name && row.DnsState != DNSUnmanaged {
		w, err := s.DNS.WriterFor(ctx, st.AppsBaseDomain)
		if err != nil {
			return time.Time{}, err
		}
		if w != nil {
			if err := w.Remove(ctx, row.DnsName); err != nil {
				return time.Time{}, err
			}
			if err := clusterEvent(ctx, q, row.ClusterID, "info", "IngressDNSRemoved", row.DnsName); err != nil {
				return time.Time{}, err
			}
		}
		if err := q.IngressDNSSave(ctx, queries.IngressDNSSaveParams{ClusterID: row.ClusterID, Addresses: []string{}, State: DNSRemoved}); err != nil {
			return time.Time{}, fmt.Errorf("record DNS of cluster %d: %w", row.ClusterID, err)
		}
		row.DnsName, row.DnsAddresses, row.DnsState = "", nil, DNSRemoved
	}
	if name == "" {
		if row.DnsState != DNSRemoved && row.DnsState != "" {
			if err := q.IngressDNSSave(ctx, queries.IngressDNSSaveParams{ClusterID: row.ClusterID, Addresses: []string{}, State: DNSRemoved}); err != nil {
				return time.Time{}, fmt.Errorf("record DNS of cluster %d: %w", row.ClusterID, err)
			}
		}
		return time.Time{}, nil
	}
	// Direct: the Ready ingress nodes' addresses; through the edge: the
	// shared Gateway's (recorded by the edge check).
	want := row.EdgeGateway
	if row.Mode != ModeEdge {
		want, err = q.IngressDNSDesired(ctx, row.ClusterID)
		if err != nil {
			return time.Time{}, fmt.Errorf("addresses of cluster %d's ingress nodes: %w", row.ClusterID, err)
		}
	}
	w, err := s.DNS.WriterFor(ctx, st.AppsBaseDomain)
	if err != nil {
		return time.Time{}, err
	}
	if w == nil {
		// The admin keeps the records: the page says what they should be.
		if row.DnsState != DNSUnmanaged || row.DnsName != name || !slices.Equal(row.DnsAddresses, want) {
			if err := q.IngressDNSSave(ctx, queries.IngressDNSSaveParams{ClusterID: row.ClusterID, Name: name, Addresses: want, State: DNSUnmanaged}); err != nil {
				return time.Time{}, fmt.Errorf("record DNS of cluster %d: %w", row.ClusterID, err)
			}
		}
		return time.Time{}, nil
	}
	wantAddrs := make([]netip.Addr, 0, len(want))
	for _, a := range want {
		if ip, err := netip.ParseAddr(a); err == nil {
			wantAddrs = append(wantAddrs, ip)
		}
	}
	have, err := w.Lookup(ctx, name)
	if err != nil {
		return time.Time{}, err
	}
	haveStrs := addrStrings(have)
	if !slices.Equal(haveStrs, want) {
		if len(wantAddrs) == 0 {
			err = w.Remove(ctx, name)
		} else {
			err = w.Set(ctx, name, wantAddrs)
		}
		if err != nil {
			return time.Time{}, err
		}
		reason, msg := "IngressDNSChanged", name+" → "+listOr(want, "none")
		if row.DnsState == DNSPublished && row.DnsName == name && slices.Equal(row.DnsAddresses, want) {
			reason, msg = "IngressDNSRestored", fmt.Sprintf("%s: found %s, put back %s", name, listOr(haveStrs, "none"), listOr(want, "none"))
		}
		if err := clusterEvent(ctx, q, row.ClusterID, "info", reason, msg); err != nil {
			return time.Time{}, err
		}
	}
	if row.DnsState != DNSPublished || row.DnsName != name || !slices.Equal(row.DnsAddresses, want) {
		if err := q.IngressDNSSave(ctx, queries.IngressDNSSaveParams{ClusterID: row.ClusterID, Name: name, Addresses: want, State: DNSPublished}); err != nil {
			return time.Time{}, fmt.Errorf("record DNS of cluster %d: %w", row.ClusterID, err)
		}
	}
	return time.Now().Add(DNSInterval), nil
}

// addrStrings are the addresses as text, sorted as text (as PostgreSQL
// sorts IngressDNSDesired's).
func addrStrings(addrs []netip.Addr) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func listOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, ", ")
}

// clusterEvent appends an event to the cluster's timeline.
func clusterEvent(ctx context.Context, q *queries.Queries, clusterID int64, level, reason, msg string) error {
	if _, err := q.ClusterEventCreate(ctx, queries.ClusterEventCreateParams{
		ClusterID: clusterID, Level: level, Reason: reason, Message: input.Truncate(msg, 500),
	}); err != nil {
		return fmt.Errorf("record event %s of cluster %d: %w", reason, clusterID, err)
	}
	return nil
}

// ScheduleDNSIfStale makes the cluster's CNAME target check due now when
// its recorded nodes say other than what was published, in the caller's
// transaction (the health job, after it recorded the nodes).
func ScheduleDNSIfStale(ctx context.Context, q *queries.Queries, clusterID int64) error {
	stale, err := q.IngressDNSStale(ctx, clusterID)
	if err != nil {
		return fmt.Errorf("compare the ingress records of cluster %d: %w", clusterID, err)
	}
	if !stale {
		return nil
	}
	return checks.Schedule(ctx, q, clusterID, checks.IngressDNS, time.Now())
}
