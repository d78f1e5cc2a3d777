package jobs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// check is a cluster's check row.
func (b *testBundle) check(t *testing.T, clusterID int64, kind checks.Kind) queries.ClusterCheck {
	t.Helper()
	c, err := queries.New(b.pool).ClusterCheckGet(context.Background(), queries.ClusterCheckGetParams{ClusterID: clusterID, Kind: string(kind)})
	require.NoError(t, err)
	return c
}

// schedule makes the cluster's check due at at.
func (b *testBundle) schedule(t *testing.T, clusterID int64, kind checks.Kind, at time.Time) {
	t.Helper()
	require.NoError(t, checks.Schedule(context.Background(), queries.New(b.pool), clusterID, kind, at))
}

// dispatch runs the dispatcher once with a River client that keeps unique
// jobs unique, as the platform's does (the client rivertest.Worker gives
// a job turns uniqueness off).
func (b *testBundle) dispatch(t *testing.T) {
	t.Helper()
	dispatchChecks(t, b.pool)
}

// dispatchChecks runs the dispatcher once on pool (see dispatch).
func dispatchChecks(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	w := &jobs.ClusterChecksWorker{Pool: pool}
	job := &river.Job[checks.DispatchArgs]{JobRow: &rivertype.JobRow{Kind: checks.DispatchArgs{}.Kind()}}
	require.NoError(t, w.Work(rivertest.WorkContext(context.Background(), client), job))
}

// queued are the clusters with a job of kind waiting, in id order (one
// entry per job).
func (b *testBundle) queued(t *testing.T, kind string) []int64 {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT (args->>'cluster_id')::bigint FROM river_job
		WHERE kind = $1 AND state IN ('available', 'scheduled') ORDER BY 1`, kind)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return ids
}

// TestClusterChecksDispatch: the dispatcher queues one job per ready
// cluster whose check is due, in the checks queue; leases what it queued,
// so that the next tick queues nothing more; never queues a second job
// for a cluster whose job still waits; leaves checks not due and idle ones
// alone; and puts the checks of clusters that are not ready (or are being
// deleted) to idle instead of queueing them.
func TestClusterChecksDispatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	now := time.Now()
	due1, due2 := b.readyCluster(t, "due-one"), b.readyCluster(t, "due-two")
	later, idle := b.readyCluster(t, "later"), b.readyCluster(t, "idle")
	deleting := b.readyCluster(t, "deleting")
	_, err := q.ClusterRequestDelete(ctx, deleting.ID)
	require.NoError(t, err)
	pending, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{
		OwnerID: due1.OwnerID, Name: "pending", Slug: "pending-abc123", KubernetesVersion: "v1.34.0", PublicAccessMode: "loadbalancer",
	})
	require.NoError(t, err)
	for _, c := range []queries.Cluster{due1, due2, deleting, pending} {
		b.schedule(t, c.ID, checks.NodeHealth, now.Add(-time.Second))
	}
	b.schedule(t, later.ID, checks.NodeHealth, now.Add(time.Hour))
	b.schedule(t, idle.ID, checks.NodeHealth, now)
	require.NoError(t, q.ClusterCheckIdle(ctx, queries.ClusterCheckIdleParams{ClusterID: idle.ID, Kind: string(checks.NodeHealth)}))

	b.dispatch(t)
	require.Equal(t, []int64{due1.ID, due2.ID}, b.queued(t, "node_health"))
	var queue string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT DISTINCT queue FROM river_job WHERE kind = 'node_health'").Scan(&queue))
	require.Equal(t, checks.Queue, queue)
	for _, c := range []queries.Cluster{due1, due2} {
		leased := b.check(t, c.ID, checks.NodeHealth).DueAt
		require.True(t, leased.Valid)
		require.WithinDuration(t, now.Add(checks.Lease), leased.Time, time.Minute, "leased until a lost job may be retried")
	}
	require.WithinDuration(t, now.Add(time.Hour), b.check(t, later.ID, checks.NodeHealth).DueAt.Time, time.Second, "not due: untouched")
	for _, c := range []queries.Cluster{idle, deleting, pending} {
		require.False(t, b.check(t, c.ID, checks.NodeHealth).DueAt.Valid, "cluster %s: idle", c.Name)
	}

	b.dispatch(t)
	require.Equal(t, []int64{due1.ID, due2.ID}, b.queued(t, "node_health"), "leased: nothing more queued")

	// Due again (the lease ran out) while the first jobs still wait: no
	// second job for either cluster.
	_, err = checks.MakeAllDue(ctx, q, checks.NodeHealth)
	require.NoError(t, err)
	b.dispatch(t)
	require.Equal(t, []int64{due1.ID, due2.ID, later.ID}, b.queued(t, "node_health"), "one job per cluster at most")
}

// TestDNSChecksDispatchEveryState: DNS checks are queued for clusters in
// every state, as a record lives from creation to deletion (and its
// removal after).
func TestDNSChecksDispatchEveryState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	ready := b.readyCluster(t, "dns-ready")
	deleted := b.readyCluster(t, "dns-deleted")
	require.NoError(t, q.ClusterMarkDeleted(ctx, deleted.ID))
	pending, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{
		OwnerID: ready.OwnerID, Name: "dns-pending", Slug: "dns-pending-abc123", KubernetesVersion: "v1.34.0", PublicAccessMode: "loadbalancer",
	})
	require.NoError(t, err)
	for _, c := range []queries.Cluster{ready, deleted, pending} {
		require.NoError(t, dnsrecords.Schedule(ctx, q, c.ID))
	}
	b.dispatch(t)
	require.ElementsMatch(t, []int64{ready.ID, deleted.ID, pending.ID}, b.queued(t, "dns_record"))
	for _, c := range []queries.Cluster{ready, deleted, pending} {
		require.True(t, b.check(t, c.ID, checks.DNSRecord).DueAt.Valid, "cluster %s: leased, not idle", c.Name)
	}
}

// TestCheckBackoff records checks of a cluster that does not answer: each
// failure doubles the wait from the interval, up to checks.MaxBackoff,
// give or take a tenth; the row says since when the cluster has been
// unreachable and why; one log line says it became unreachable and one
// that it came back, whatever the attempts in between. Other errors are
// River's to retry and leave the row alone.
func TestCheckBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var logs syncBuffer
	rec := checks.Recorder{Q: queries.New(b.pool), Log: checks.NewTransitions(slog.New(slog.NewTextHandler(&logs, nil)), checks.NodeHealth, 60)}
	cl := b.readyCluster(t, "backoff")
	b.schedule(t, cl.ID, checks.NodeHealth, time.Now())
	interval := time.Minute
	unreachable := checks.Unreachable(errors.New("dial tcp 10.0.0.1:443: i/o timeout"))

	var since time.Time
	for i, wait := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, checks.MaxBackoff, checks.MaxBackoff} {
		start := time.Now()
		require.NoError(t, rec.Done(ctx, cl.ID, checks.NodeHealth, interval, start.Add(interval), unreachable))
		c := b.check(t, cl.ID, checks.NodeHealth)
		require.Equal(t, int32(i+1), c.Failures)
		require.True(t, c.UnreachableSince.Valid)
		if i == 0 {
			since = c.UnreachableSince.Time
		}
		require.Equal(t, since, c.UnreachableSince.Time, "unreachable since the first failure")
		require.Equal(t, "dial tcp 10.0.0.1:443: i/o timeout", c.LastError)
		got := c.DueAt.Time.Sub(start)
		require.GreaterOrEqual(t, got, time.Duration(float64(wait)*0.9)-time.Second, "failure %d", i+1)
		require.LessOrEqual(t, got, time.Duration(float64(wait)*1.1)+time.Second, "failure %d", i+1)
	}
	require.Equal(t, 1, strings.Count(logs.String(), `msg="cluster unreachable"`), logs.String())

	other := errors.New("database is down")
	require.ErrorIs(t, rec.Done(ctx, cl.ID, checks.NodeHealth, interval, time.Now().Add(interval), other), other)
	require.Equal(t, int32(6), b.check(t, cl.ID, checks.NodeHealth).Failures, "not a check outcome: the row is left alone")

	next := time.Now().Add(interval)
	require.NoError(t, rec.Done(ctx, cl.ID, checks.NodeHealth, interval, next, nil))
	c := b.check(t, cl.ID, checks.NodeHealth)
	require.Zero(t, c.Failures)
	require.False(t, c.UnreachableSince.Valid)
	require.Empty(t, c.LastError)
	require.WithinDuration(t, next, c.DueAt.Time, time.Millisecond)
	require.NoError(t, rec.Done(ctx, cl.ID, checks.NodeHealth, interval, time.Time{}, nil))
	require.False(t, b.check(t, cl.ID, checks.NodeHealth).DueAt.Valid, "no next time: idle")
	require.Equal(t, 1, strings.Count(logs.String(), `msg="cluster reachable again"`), logs.String())
	require.Equal(t, 1, strings.Count(logs.String(), `msg="cluster unreachable"`), "no line per attempt")
}

// TestTransitionsBounded: when many clusters go unreachable at once, the
// first ones a minute are logged one by one and the rest counted in one
// line; the other kinds' changes are not logged at info level.
func TestTransitionsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var logs syncBuffer
	log := checks.NewTransitions(slog.New(slog.NewTextHandler(&logs, nil)), checks.NodeHealth, 3)
	rec := checks.Recorder{Q: queries.New(b.pool), Log: log}
	down := checks.Unreachable(errors.New("connection refused"))
	for i := range 10 {
		cl := b.readyCluster(t, fmt.Sprintf("down-%d", i))
		for _, kind := range []checks.Kind{checks.NodeHealth, checks.JoinTokenSync} {
			b.schedule(t, cl.ID, kind, time.Now())
			require.NoError(t, rec.Done(ctx, cl.ID, kind, time.Minute, time.Time{}, down))
		}
	}
	log.Flush(ctx)
	log.Flush(ctx)
	out := logs.String()
	require.Equal(t, 3, strings.Count(out, `msg="cluster unreachable"`), out)
	require.Equal(t, 1, strings.Count(out, "more clusters changed reachability"), out)
	require.Contains(t, out, "unreachable=7 reachable_again=0")
	require.NotContains(t, out, "join_token_sync", "the other kinds log at debug level")
}

// TestHealthCheckOfHangingControlPlane: a control plane that accepts
// connections and never answers holds a node health check for about
// checks.CallTimeout, not minutes; the check backs off and says since when
// the cluster has been unreachable.
func TestHealthCheckOfHangingControlPlane(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	hanging := testenv.HangingListener(t)
	cl := b.readyCluster(t, "hanging")
	b.schedule(t, cl.ID, checks.NodeHealth, time.Now())
	box, err := testBox()
	require.NoError(t, err)
	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.NodeHealthWorker{
		Pool: b.pool, Logger: b.logger, Box: box, Threshold: 5 * time.Minute,
		VirtualConfig: hangingConfig(hanging),
	})
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // the job row only
	start := time.Now()
	res, err := w.Work(ctx, t, tx, nodes.HealthArgs{ClusterID: cl.ID}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind, "recorded, not retried by River")
	took := time.Since(start)
	require.Less(t, took, checks.CallTimeout+5*time.Second, "bounded by the call timeout")
	c := b.check(t, cl.ID, checks.NodeHealth)
	require.Equal(t, int32(1), c.Failures)
	require.True(t, c.UnreachableSince.Valid)
	require.Greater(t, time.Until(c.DueAt.Time), 30*time.Second, "backing off")
}

// hangingConfig reaches every cluster at addr.
func hangingConfig(addr string) clusters.VirtualConfigFunc {
	return func(context.Context, queries.Cluster) (*rest.Config, error) {
		return &rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, nil
	}
}

// syncBuffer is a bytes.Buffer that loggers may write to concurrently.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
