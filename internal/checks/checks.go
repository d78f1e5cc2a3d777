// Package checks paces the periodic work done per cluster (node health,
// join token sync, node quota sync, DNS records, ingress and metrics;
// every kind is listed here), so that it holds at 10,000 clusters. Each cluster has, per kind of check, a
// due time in cluster_checks. A dispatcher job (jobs.ClusterChecksWorker)
// claims the due rows in batches and queues one small job per cluster in
// the checks queue, which River works with bounded concurrency; the job
// does its work with a short timeout and records the outcome here: the
// next due time after a success (or idle, until something asks again), an
// exponential backoff while the cluster cannot be reached (capped at
// MaxBackoff), and since when it has been unreachable. A claim leases the
// row, so checks of one cluster never overlap, and a check whose job was
// lost comes due again when the lease ends.
package checks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/queries"
)

// Kind names a kind of check: the kind column of cluster_checks.
type Kind string

// The kinds of check, all listed here, where they are paced. The job each
// kind queues, and its interval, belong to the domain whose work it is.
const (
	// NodeHealth snapshots a ready cluster's nodes (nodes.HealthArgs).
	NodeHealth Kind = "node_health"
	// JoinTokenSync syncs a ready cluster's join tokens (jointokens.SyncArgs).
	JoinTokenSync Kind = "join_token_sync"
	// NodeQuotaSync re-syncs a ready cluster's node quota webhook
	// (nodequota.SyncArgs).
	NodeQuotaSync Kind = "node_quota_sync"
	// MetricsScrape scrapes a ready cluster's control plane, every
	// metrics.Settings.Interval, backing off while it does not answer
	// (metrics.ScrapeArgs).
	MetricsScrape Kind = "metrics_scrape"
	// DNSRecord converges a cluster's API host name record
	// (dnsrecords.SyncArgs).
	DNSRecord Kind = "dns_record"
	// IngressDNS converges the CNAME target's records of a cluster's
	// managed ingress (ingress.DNSArgs).
	IngressDNS Kind = "ingress_dns"
	// IngressHostnames writes, verifies and takes out the CNAMEs of a
	// cluster's ingress host names (ingress.HostnamesArgs).
	IngressHostnames Kind = "ingress_hostnames"
	// IngressEdge keeps a cluster's routes through the platform edge
	// (ingress.EdgeArgs).
	IngressEdge Kind = "ingress_edge"
)

// Queue is the River queue of the per-cluster check jobs: apart from the
// cluster lifecycle's, so that a backlog of checks never delays an install.
const Queue = "checks"

const (
	// MaxBackoff caps the wait before checking an unreachable cluster again.
	MaxBackoff = 10 * time.Minute
	// Lease is how long a claimed check stays claimed: longer than a check
	// job waits in its queue and runs, so that it is not claimed twice.
	Lease = 10 * time.Minute
	// CallTimeout bounds each call a check makes to a cluster's control
	// plane, so that a hanging one holds a worker for seconds, not minutes.
	CallTimeout = 5 * time.Second
)

// Bounded is a copy of cfg whose every call times out after CallTimeout.
func Bounded(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = CallTimeout
	return cfg
}

// UnreachableError is a check that could not reach its cluster: it is
// recorded (with backoff) rather than retried by River.
type UnreachableError struct{ Err error }

func (e *UnreachableError) Error() string { return "cluster unreachable: " + e.Err.Error() }
func (e *UnreachableError) Unwrap() error { return e.Err }

// Unreachable marks err as the cluster's control plane not answering.
func Unreachable(err error) error {
	if err == nil {
		return nil
	}
	return &UnreachableError{Err: err}
}

// Schedule makes the cluster's check of kind due at at (or keeps it due
// sooner), in the caller's transaction.
func Schedule(ctx context.Context, q *queries.Queries, clusterID int64, kind Kind, at time.Time) error {
	if err := q.ClusterCheckSchedule(ctx, queries.ClusterCheckScheduleParams{
		ClusterID: clusterID, Kind: string(kind), DueAt: pgtype.Timestamptz{Time: at, Valid: true},
	}); err != nil {
		return fmt.Errorf("schedule %s of cluster %d: %w", kind, clusterID, err)
	}
	return nil
}

// Claim claims up to batch due checks of kind, in the caller's
// transaction: it returns the ready clusters among them, whose checks are
// leased (see Lease), and how many it claimed in all; the checks of
// clusters that are not ready go idle until the cluster is ready again.
func Claim(ctx context.Context, q *queries.Queries, kind Kind, batch int32, now time.Time) (ready []int64, claimed int, err error) {
	return claim(ctx, q, kind, batch, now, false)
}

// ClaimAnyState is Claim for a kind that checks clusters in every state,
// deleted ones included: it returns every cluster it claimed.
func ClaimAnyState(ctx context.Context, q *queries.Queries, kind Kind, batch int32, now time.Time) (ids []int64, err error) {
	ids, _, err = claim(ctx, q, kind, batch, now, true)
	return ids, err
}

func claim(ctx context.Context, q *queries.Queries, kind Kind, batch int32, now time.Time, anyState bool) (ready []int64, claimed int, err error) {
	rows, err := q.ClusterCheckClaimDue(ctx, queries.ClusterCheckClaimDueParams{
		AnyState: anyState, Kind: string(kind), Batch: batch, LeasedUntil: pgtype.Timestamptz{Time: now.Add(Lease), Valid: true},
	})
	if err != nil {
		return nil, 0, fmt.Errorf("claim due %s checks: %w", kind, err)
	}
	for _, r := range rows {
		if r.Ready {
			ready = append(ready, r.ClusterID)
		}
	}
	return ready, len(rows), nil
}

// Recorder records how checks went, logging (through Log) only when a
// cluster's state changes (reachable to unreachable, and back), not each
// attempt.
type Recorder struct {
	Q   *queries.Queries
	Log *Transitions
}

// Done records the outcome of a check: next is when the next one is due
// (zero: idle until asked) when err is nil; an UnreachableError backs the
// check off from interval instead and returns nil. Any other error is
// returned as it is, for River to retry.
func (r Recorder) Done(ctx context.Context, clusterID int64, kind Kind, interval time.Duration, next time.Time, err error) error {
	var unreachable *UnreachableError
	switch {
	case err == nil:
		return r.succeeded(ctx, clusterID, kind, next)
	case errors.As(err, &unreachable):
		return r.failed(ctx, clusterID, kind, interval, unreachable)
	}
	return err
}

func (r Recorder) succeeded(ctx context.Context, clusterID int64, kind Kind, next time.Time) error {
	due := pgtype.Timestamptz{Time: next, Valid: !next.IsZero()}
	was, err := r.Q.ClusterCheckSucceeded(ctx, queries.ClusterCheckSucceededParams{ClusterID: clusterID, Kind: string(kind), DueAt: due})
	if errors.Is(err, pgx.ErrNoRows) {
		// Run without a row (asked for directly): nothing to pace.
		return nil
	}
	if err != nil {
		return fmt.Errorf("record %s of cluster %d: %w", kind, clusterID, err)
	}
	if was {
		r.Log.changed(ctx, clusterID, kind, true)
	}
	return nil
}

func (r Recorder) failed(ctx context.Context, clusterID int64, kind Kind, interval time.Duration, cause *UnreachableError) error {
	row, err := r.Q.ClusterCheckFailed(ctx, queries.ClusterCheckFailedParams{
		ClusterID: clusterID, Kind: string(kind), LastError: input.Truncate(cause.Err.Error(), 500),
		BaseSeconds: interval.Seconds(), MaxSeconds: MaxBackoff.Seconds(),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("record %s of cluster %d: %w", kind, clusterID, err)
	}
	if row.FirstFailure {
		r.Log.changed(ctx, clusterID, kind, false)
	}
	return nil
}

// UniqueWhileWaiting makes a check job unique per arguments while one is
// waiting or running, so that a cluster never has two of a kind queued.
// (River requires the running state among the unique ones.)
func UniqueWhileWaiting() river.UniqueOpts {
	return river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
		rivertype.JobStateRetryable, rivertype.JobStateScheduled,
	}}
}

// DispatchArgs is the periodic job that claims the due checks of every
// kind and queues their jobs (jobs.ClusterChecksWorker).
type DispatchArgs struct{}

// Kind implements river.JobArgs.
func (DispatchArgs) Kind() string { return "cluster_checks" }

// InsertOpts implements river.JobArgsWithInsertOpts: one at a time; the
// next tick comes soon, so a failed one is not retried.
func (DispatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, UniqueOpts: UniqueWhileWaiting()}
}

// MakeAllDue makes every scheduled check of kind due now, as after a
// change that every cluster must see (a new base URL).
func MakeAllDue(ctx context.Context, q *queries.Queries, kind Kind) (int64, error) {
	n, err := q.ClusterCheckMakeAllDue(ctx, string(kind))
	if err != nil {
		return 0, fmt.Errorf("make %s checks due: %w", kind, err)
	}
	return n, nil
}

// Transitions logs clusters going unreachable and coming back: one line
// per change, up to a number a minute; past it, the changes are counted
// and Flush logs the count, so that 10,000 clusters failing together (a
// network outage) write a few lines, not 10,000. Only the changes of one
// kind are logged at info level (the node health check's, which checks
// every ready cluster: they are the cluster's); the other kinds' go to
// debug. The last
// error of each check is in cluster_checks (and on the cluster's page).
// Safe for concurrent use; build one per process.
type Transitions struct {
	logger     *slog.Logger
	kind       Kind
	limit      *rate.Limiter
	down, back atomic.Int64
}

// NewTransitions logs up to perMinute changes of kind a minute one by one.
func NewTransitions(logger *slog.Logger, kind Kind, perMinute int) *Transitions {
	return &Transitions{logger: logger, kind: kind, limit: rate.NewLimiter(rate.Limit(float64(perMinute)/60), perMinute)}
}

func (t *Transitions) changed(ctx context.Context, clusterID int64, kind Kind, reachable bool) {
	if t == nil {
		return
	}
	msg, level := "cluster unreachable", slog.LevelWarn
	if reachable {
		msg, level = "cluster reachable again", slog.LevelInfo
	}
	if kind != t.kind {
		t.logger.DebugContext(ctx, msg, "cluster_id", clusterID, "check", kind)
		return
	}
	if t.limit.Allow() {
		t.logger.Log(ctx, level, msg, "cluster_id", clusterID)
		return
	}
	if reachable {
		t.back.Add(1)
	} else {
		t.down.Add(1)
	}
}

// Flush logs how many changes were not logged one by one since the last
// Flush, if any.
func (t *Transitions) Flush(ctx context.Context) {
	down, back := t.down.Swap(0), t.back.Swap(0)
	if down == 0 && back == 0 {
		return
	}
	t.logger.WarnContext(ctx, "more clusters changed reachability than are logged one by one",
		"unreachable", down, "reachable_again", back)
}
