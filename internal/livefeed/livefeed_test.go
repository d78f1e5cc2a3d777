package livefeed_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/livefeed"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// eventually bounds a notification's trip through the database.
const eventually = 10 * time.Second

// quiet is how long a subscriber that should not be woken is watched.
const quiet = 500 * time.Millisecond

type testBundle struct {
	pool *pgxpool.Pool
	feed *livefeed.Feed
}

// setup runs a feed on a database of the test's own until the test ends,
// and waits until it listens.
func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{pool: testenv.DB(t)}
	b.feed = livefeed.New(b.pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.feed.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, b.feed.Listening, eventually, 10*time.Millisecond)
	return b
}

func (b *testBundle) newCluster(t *testing.T, name string) int64 {
	t.Helper()
	ctx := context.Background()
	q := queries.New(b.pool)
	u, err := q.UserCreate(ctx, queries.UserCreateParams{Email: name + "@example.com", Name: name, Role: "user"})
	require.NoError(t, err)
	c, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{OwnerID: u.ID, Name: name, Slug: name, KubernetesVersion: "v1.34.0", PublicAccessMode: "loadbalancer"})
	require.NoError(t, err)
	return c.ID
}

func (b *testBundle) event(t *testing.T, clusterID int64, reason string) {
	t.Helper()
	require.NoError(t, clusters.Event(context.Background(), queries.New(b.pool), clusterID, "info", reason, ""))
}

func woken(ch <-chan struct{}, within time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	select {
	case <-ch:
		return true
	case <-time.After(within):
		return false
	}
}

func TestFeedWakesTheClustersSubscribers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	one, other := b.newCluster(t, "one"), b.newCluster(t, "other")
	first, cancelFirst := b.feed.Subscribe(one)
	second, cancelSecond := b.feed.Subscribe(one)
	defer cancelSecond()
	elsewhere, cancelElsewhere := b.feed.Subscribe(other)
	defer cancelElsewhere()

	b.event(t, one, "Created")
	require.True(t, woken(first, eventually), "the first subscriber is told")
	require.True(t, woken(second, eventually), "and the second")
	require.False(t, woken(elsewhere, quiet), "another cluster's subscriber is not")

	// A repeated event counts on the same row: still a change.
	b.event(t, one, "Created")
	require.True(t, woken(first, eventually))
	require.True(t, woken(second, eventually))

	// A burst wakes a subscriber that did not read once, not once per change.
	for range 3 {
		b.event(t, one, "Provisioning")
		b.event(t, one, "Created")
	}
	require.True(t, woken(second, eventually))
	time.Sleep(quiet) // the burst's notifications all arrive
	require.True(t, woken(first, 0))
	require.False(t, woken(first, quiet))
	woken(second, 0)

	cancelFirst()
	cancelFirst() // twice is harmless
	b.event(t, one, "Ready")
	require.True(t, woken(second, eventually))
	require.False(t, woken(first, quiet), "a cancelled subscription is not told")
}

// The cluster row's state is a change; the workers' bookkeeping is not.
func TestFeedFollowsTheClusterRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newCluster(t, "row")
	ch, cancel := b.feed.Subscribe(id)
	defer cancel()

	_, err := b.pool.Exec(context.Background(), "UPDATE clusters SET updated_at = now() + interval '1 second' WHERE id = $1", id)
	require.NoError(t, err)
	require.False(t, woken(ch, quiet), "updated_at alone is not shown")

	_, err = b.pool.Exec(context.Background(), "UPDATE clusters SET status = 'provisioning' WHERE id = $1", id)
	require.NoError(t, err)
	require.True(t, woken(ch, eventually))
}

// A node operation's progress and a token's joins are changes of their
// cluster.
func TestFeedFollowsOperationsAndTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newCluster(t, "ops")
	ctx := context.Background()
	q := queries.New(b.pool)
	op, err := q.NodeOperationCreate(ctx, queries.NodeOperationCreateParams{ClusterID: id, NodeName: "worker-1", Kind: "drain"})
	require.NoError(t, err)
	tok, err := q.JoinTokenCreate(ctx, queries.JoinTokenCreateParams{ClusterID: id, TokenID: "abcdef", TokenHash: "hash", SealedToken: "sealed"})
	require.NoError(t, err)
	ch, cancel := b.feed.Subscribe(id)
	defer cancel()
	time.Sleep(quiet)
	woken(ch, 0) // the inserts'

	require.NoError(t, q.NodeOperationAppend(ctx, queries.NodeOperationAppendParams{ID: op.ID, Line: "pod/web evicted"}))
	require.True(t, woken(ch, eventually), "progress")
	_, err = q.JoinEventCreate(ctx, queries.JoinEventCreateParams{TokenID: tok.ID, Step: "root", Status: "failed", Host: "rack1-a"})
	require.NoError(t, err)
	require.True(t, woken(ch, eventually), "a join event")
}
