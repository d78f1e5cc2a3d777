package jobs_test

import (
	"context"
	"crypto/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestJoinTokenSyncPacing: a ready cluster's join token sync stays due
// while it has a token still in use or a joined node not yet registered,
// and goes idle otherwise; a cluster that is not ready is not synced. One
// periodic sync waits per cluster at most; a sync a join asks for is
// never dropped for a periodic one, and one per cluster per window.
func TestJoinTokenSyncPacing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	pool := b.pool
	box, err := testBox()
	require.NoError(t, err)
	q := queries.New(pool)
	u, err := q.UserCreate(ctx, queries.UserCreateParams{Email: "syncall@example.test", Name: "syncall", Role: adminauth.RoleUser})
	require.NoError(t, err)
	cluster := func(name string, ready bool) int64 {
		cl, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{OwnerID: u.ID, Name: name, Slug: name + "-" + strings.ToLower(rand.Text()[:6]), KubernetesVersion: "v1.34.0", PublicAccessMode: "nodeport"})
		require.NoError(t, err)
		if ready {
			_, err = q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: cl.ID, Endpoint: "cp.example:443", Generation: cl.Generation})
			require.NoError(t, err)
		}
		// Due now, as creating a token makes it.
		b.schedule(t, cl.ID, checks.JoinTokenSync, time.Now())
		return cl.ID
	}
	token := func(clusterID int64) queries.JoinToken {
		tok, err := q.JoinTokenCreate(ctx, queries.JoinTokenCreateParams{ClusterID: clusterID, TokenID: strings.ToLower(rand.Text()[:6]), TokenHash: rand.Text(), SealedToken: "x"})
		require.NoError(t, err)
		return tok
	}
	active := cluster("active", true)
	token(active)
	revoked := cluster("revoked", true)
	_, err = q.JoinTokenRevoke(ctx, token(revoked).ID)
	require.NoError(t, err)
	awaiting := cluster("awaiting", true)
	used := token(awaiting)
	_, err = q.JoinTokenNodeRecord(ctx, queries.JoinTokenNodeRecordParams{TokenID: used.ID, NodeName: "late", CsrName: "csr-1"})
	require.NoError(t, err)
	require.NoError(t, q.JoinTokenMarkUsedUp(ctx, used.ID))
	registered := cluster("registered", true)
	done := token(registered)
	_, err = q.JoinTokenNodeRecord(ctx, queries.JoinTokenNodeRecordParams{TokenID: done.ID, NodeName: "on-time", CsrName: "csr-2"})
	require.NoError(t, err)
	require.NoError(t, q.JoinTokenMarkUsedUp(ctx, done.ID))
	_, err = q.JoinTokenNodeMarkRegistered(ctx, queries.JoinTokenNodeMarkRegisteredParams{ClusterID: registered, NodeNames: []string{"on-time"}})
	require.NoError(t, err)
	provisioning := cluster("provisioning", false)
	token(provisioning)

	b.dispatch(t)
	require.Equal(t, []int64{active, revoked, awaiting, registered}, b.queued(t, "join_token_sync"), "the ready clusters' syncs are queued")
	require.False(t, b.check(t, provisioning, checks.JoinTokenSync).DueAt.Valid, "not ready: idle")

	// Each synced against a real control plane (with no CSRs, and no Node
	// "late").
	virt := testenv.NewKube(t)
	w := rivertest.NewWorker(t, riverpgxv5.New(pool), &river.Config{}, &jobs.JoinTokenSyncWorker{
		Tokens: &jointokens.Service{Pool: pool, Box: box, Virtual: func(context.Context, queries.Cluster) (*rest.Config, error) {
			return rest.CopyConfig(virt.Config), nil
		}},
		Notices: notify.Notices{Box: box},
	})
	inserter, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	rows, err := pool.Query(ctx, "SELECT id FROM river_job WHERE kind = 'join_token_sync' AND state = 'available'")
	require.NoError(t, err)
	queued, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Len(t, queued, 4)
	for _, id := range queued {
		job, err := inserter.JobGet(ctx, id)
		require.NoError(t, err)
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		res, err := w.WorkJob(ctx, t, tx, job)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.NoError(t, tx.Commit(ctx))
	}
	for _, id := range []int64{active, awaiting} {
		due := b.check(t, id, checks.JoinTokenSync).DueAt
		require.True(t, due.Valid, "cluster %d: more to sync", id)
		require.WithinDuration(t, time.Now().Add(jointokens.SyncInterval), due.Time, 5*time.Second)
	}
	for _, id := range []int64{revoked, registered} {
		require.False(t, b.check(t, id, checks.JoinTokenSync).DueAt.Valid, "cluster %d: nothing to sync, idle", id)
	}

	// (rivertest turns uniqueness off; the client the worker runs with
	// does not.) One waits per cluster; once it ran, the next may come.
	res, err := inserter.Insert(ctx, jointokens.SyncArgs{ClusterID: revoked}, nil)
	require.NoError(t, err)
	require.False(t, res.UniqueSkippedAsDuplicate)
	again, err := inserter.Insert(ctx, jointokens.SyncArgs{ClusterID: revoked}, nil)
	require.NoError(t, err)
	require.True(t, again.UniqueSkippedAsDuplicate, "one waiting is enough")

	// A join's request is not the duplicate of the periodic sync waiting:
	// it is queued apart, in the clusters queue, after its window.
	now := time.Now()
	args, opts := jointokens.RequestSync(revoked, now)
	requested, err := inserter.Insert(ctx, args, opts)
	require.NoError(t, err)
	require.False(t, requested.UniqueSkippedAsDuplicate, "never dropped for a periodic sync")
	require.Equal(t, clusters.Queue, requested.Job.Queue)
	require.True(t, requested.Job.ScheduledAt.After(now), "runs when its window ends, seeing every join reported in it")
	require.WithinDuration(t, now, requested.Job.ScheduledAt, 3*time.Second)
	args, opts = jointokens.RequestSync(revoked, now)
	twice, err := inserter.Insert(ctx, args, opts)
	require.NoError(t, err)
	require.True(t, twice.UniqueSkippedAsDuplicate, "one request per cluster per window")

	_, err = pool.Exec(ctx, "UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1", res.Job.ID)
	require.NoError(t, err)
	again, err = inserter.Insert(ctx, jointokens.SyncArgs{ClusterID: revoked}, nil)
	require.NoError(t, err)
	require.False(t, again.UniqueSkippedAsDuplicate, "a finished sync does not hold back the next")
}

// TestJoinTokenSyncNotices: a sync counts the token's uses against the
// cluster's real control plane, notes which joined nodes registered a
// Node, and tells the owner of the joins not told yet in one notice: one
// node by name and token, several by count and names. A node whose CSR is
// in but whose Node is not registered has not joined yet: it is neither a
// use of its token nor told of, until a later sync sees its Node. The
// next sync tells nothing new. The email goes only when the owner asked
// for it, as the default does not.
func TestJoinTokenSyncNotices(t *testing.T) {
	t.Parallel()
	require.True(t, notify.Default(notify.JoinTokenUsed, notify.InApp))
	require.False(t, notify.Default(notify.JoinTokenUsed, notify.Email), "joins are not emailed unless asked for")
	catalog, err := locale.New()
	require.NoError(t, err)
	// One control plane for every case: the names of their Nodes differ.
	virt := testenv.NewKube(t)

	type notice = [2]string // title, body (%s is the token id)
	tests := []struct {
		name        string
		description string
		nodes       []string // recorded in this order
		registered  []string // those with a Node at the first sync; the rest register before the second
		byEmail     bool
		first, then []notice // what each sync tells
	}{
		{
			name: "one-node", description: "rack 3", nodes: []string{"worker-1"},
			then: []notice{{"Node worker-1 joined one-node", "The node worker-1 joined your cluster one-node with the join token rack 3."}},
		},
		{
			name: "no-description", nodes: []string{"worker-2"}, registered: []string{"worker-2"}, byEmail: true,
			first: []notice{{"Node worker-2 joined no-description", "The node worker-2 joined your cluster no-description with the join token %s."}},
		},
		{
			name: "several-nodes", description: "fleet", nodes: []string{"node-b", "node-a", "node-c"}, registered: []string{"node-a", "node-b"}, byEmail: true,
			first: []notice{{"2 nodes joined several-nodes", "2 nodes joined your cluster several-nodes: node-a, node-b."}},
			then:  []notice{{"Node node-c joined several-nodes", "The node node-c joined your cluster several-nodes with the join token fleet."}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			box, err := testBox()
			require.NoError(t, err)
			q := queries.New(b.pool)
			cl := b.readyCluster(t, tt.name)
			owner, err := q.UserGetByID(ctx, cl.OwnerID)
			require.NoError(t, err)
			if tt.byEmail {
				require.NoError(t, q.NotificationPreferenceSet(ctx, queries.NotificationPreferenceSetParams{
					UserID: owner.ID, Kind: string(notify.JoinTokenUsed), Channel: string(notify.Email), Enabled: true,
				}))
			}
			tok, err := q.JoinTokenCreate(ctx, queries.JoinTokenCreateParams{
				ClusterID: cl.ID, TokenID: strings.ToLower(rand.Text()[:6]), TokenHash: rand.Text(), SealedToken: "x", Description: tt.description,
			})
			require.NoError(t, err)
			for i, node := range tt.nodes {
				n, err := q.JoinTokenNodeRecord(ctx, queries.JoinTokenNodeRecordParams{TokenID: tok.ID, NodeName: node, CsrName: "csr-" + string(rune('a'+i))})
				require.NoError(t, err)
				require.EqualValues(t, 1, n)
			}
			register := func(names []string) {
				t.Helper()
				for _, node := range names {
					_, err := virt.Client(t).CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
					require.NoError(t, err)
				}
			}

			w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.JoinTokenSyncWorker{
				Tokens: &jointokens.Service{Pool: b.pool, Box: box, Virtual: func(context.Context, queries.Cluster) (*rest.Config, error) {
					return rest.CopyConfig(virt.Config), nil
				}},
				Notices: notify.Notices{Box: box},
			})
			sync := func() {
				t.Helper()
				tx, err := b.pool.Begin(ctx)
				require.NoError(t, err)
				defer tx.Rollback(ctx) //nolint:errcheck // the job row only
				res, err := w.Work(ctx, t, tx, jointokens.SyncArgs{ClusterID: cl.ID}, nil)
				require.NoError(t, err)
				require.Equal(t, river.EventKindJobCompleted, res.EventKind)
			}
			// notices are the owner's join notices, title and body, oldest
			// first, and the emails queued for them.
			notices := func() ([]notice, []string) {
				t.Helper()
				rows, err := q.NotificationListByUser(ctx, queries.NotificationListByUserParams{UserID: owner.ID, RowLimit: 1000})
				require.NoError(t, err)
				words := []notice{}
				for _, n := range slices.Backward(rows) {
					require.Equal(t, string(notify.JoinTokenUsed), n.Kind)
					title, body := notify.Word(catalog.For("en"), n)
					words = append(words, notice{title, body})
				}
				erows, err := b.pool.Query(ctx, "SELECT args->>'to' FROM river_job WHERE kind = 'email' ORDER BY id")
				require.NoError(t, err)
				emails, err := pgx.CollectRows(erows, pgx.RowTo[string])
				require.NoError(t, err)
				return words, emails
			}
			want := []notice{}
			wantEmails := []string{}
			expect := func(told []notice, registered []string) {
				t.Helper()
				for _, n := range told {
					want = append(want, notice{n[0], strings.ReplaceAll(n[1], "%s", tok.TokenID)})
					if tt.byEmail {
						wantEmails = append(wantEmails, owner.Email)
					}
				}
				words, emails := notices()
				require.Equal(t, want, words)
				require.Equal(t, wantEmails, emails)
				// What the sync read from the control plane: the token's
				// uses are its registered nodes.
				toks, err := q.JoinTokenListByCluster(ctx, cl.ID)
				require.NoError(t, err)
				require.Len(t, toks, 1)
				require.EqualValues(t, len(registered), toks[0].Uses)
				recorded, err := q.JoinTokenNodeListByToken(ctx, tok.ID)
				require.NoError(t, err)
				require.Len(t, recorded, len(tt.nodes), "the sync keeps the joins it did not see as CSRs")
				for _, n := range recorded {
					in := slices.Contains(registered, n.NodeName)
					require.Equal(t, in, n.RegisteredAt.Valid, n.NodeName)
					require.Equal(t, in, n.NotifiedAt.Valid, "%s is told of once registered", n.NodeName)
				}
			}

			// healthDue: the node health check (whose snapshot the nodes
			// page lists) is due now, as a node just registered.
			healthDue := func() bool {
				t.Helper()
				var due bool
				err := b.pool.QueryRow(ctx, `SELECT coalesce(bool_or(due_at <= now()), false) FROM cluster_checks WHERE cluster_id = $1 AND kind = $2`,
					cl.ID, string(checks.NodeHealth)).Scan(&due)
				require.NoError(t, err)
				return due
			}
			_, err = b.pool.Exec(ctx, `DELETE FROM cluster_checks WHERE cluster_id = $1`, cl.ID)
			require.NoError(t, err)

			register(tt.registered)
			sync()
			expect(tt.first, tt.registered)
			require.Equal(t, len(tt.registered) > 0, healthDue(), "a registration makes the node list due at once")
			var rest []string
			for _, n := range tt.nodes {
				if !slices.Contains(tt.registered, n) {
					rest = append(rest, n)
				}
			}
			register(rest)
			sync()
			expect(tt.then, tt.nodes)
			// Told once: the next sync tells nothing new.
			sync()
			expect(nil, tt.nodes)
		})
	}
}
