package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// readyCluster is a ready cluster row of a new user's.
func (b *testBundle) readyCluster(t *testing.T, name string) queries.Cluster {
	t.Helper()
	ctx := context.Background()
	q := queries.New(b.pool)
	u, err := q.UserCreate(ctx, queries.UserCreateParams{Email: name + "@example.test", Name: name, Role: "user"})
	require.NoError(t, err)
	cl, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{
		OwnerID: u.ID, Name: name, Slug: name + "-abc123", KubernetesVersion: "v1.34.0", PublicAccessMode: "loadbalancer",
	})
	require.NoError(t, err)
	_, err = q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: cl.ID, Endpoint: name + ".clusters.test", Generation: cl.Generation})
	require.NoError(t, err)
	return cl
}

// TestNodeDrainRerunAfterNodeGone reruns node operations whose Node is
// already gone, as when a worker was killed right after it deleted the
// Node and River's rescuer ran the job again.
func TestNodeDrainRerunAfterNodeGone(t *testing.T) {
	t.Parallel()
	kube := testenv.HostKube(t)
	drainOpts := &nodes.DrainOptions{IgnoreDaemonSets: true, GracePeriodSeconds: -1, TimeoutSeconds: 30}
	tests := []struct {
		name       string
		kind       string
		drain      *nodes.DrainOptions
		deleteNode bool
		status     string
		message    string
		progress   string
	}{
		{name: "drain-then-delete", kind: nodes.OpDelete, drain: drainOpts, deleteNode: true, status: nodes.OperationSucceeded, progress: "already deleted"},
		{name: "delete", kind: nodes.OpDelete, deleteNode: true, status: nodes.OperationSucceeded, progress: "deleted"},
		{name: "drain", kind: nodes.OpDrain, drain: drainOpts, status: nodes.OperationFailed, message: "the node no longer exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			cl := b.readyCluster(t, "rerun-"+tt.name)
			// The host apiserver is shared: the node's name is this test's.
			nodeName := fmt.Sprintf("gone-%s-%d", tt.name, cl.ID)
			nodeClient := kube.Client(t).CoreV1().Nodes()
			_, err := nodeClient.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{})
			require.NoError(t, err)
			// The first attempt deleted the Node, then its worker died.
			require.NoError(t, nodeClient.Delete(ctx, nodeName, metav1.DeleteOptions{}))

			q := queries.New(b.pool)
			// The nodes page's record of the node.
			require.NoError(t, q.NodeUpsert(ctx, queries.NodeUpsertParams{ClusterID: cl.ID, Name: nodeName, Ready: true, Conditions: []byte("[]"), Addresses: []byte("[]")}))
			op, err := q.NodeOperationCreate(ctx, queries.NodeOperationCreateParams{ClusterID: cl.ID, NodeName: nodeName, Kind: tt.kind})
			require.NoError(t, err)
			worker := &jobs.NodeOperationWorker{Pool: b.pool, Logger: b.logger, VirtualConfig: func(context.Context, queries.Cluster) (*rest.Config, error) {
				return rest.CopyConfig(kube.Config), nil
			}}
			w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, worker)
			tx, err := b.pool.Begin(ctx)
			require.NoError(t, err)
			defer tx.Rollback(ctx) //nolint:errcheck
			args := nodes.OperationArgs{OperationID: op.ID, ClusterID: cl.ID, NodeName: nodeName, Drain: tt.drain, DeleteNode: tt.deleteNode}
			res, err := w.Work(ctx, t, tx, args, &river.InsertOpts{MaxAttempts: 3})
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobCompleted, res.EventKind)

			op, err = q.NodeOperationGetByID(ctx, op.ID)
			require.NoError(t, err)
			require.Equal(t, tt.status, op.Status, "message: %s", op.Message)
			require.Contains(t, op.Message, tt.message)
			if tt.progress != "" {
				require.Contains(t, strings.Join(op.Progress, "\n"), tt.progress)
			}
			// A deleted node leaves the record at once; a failed drain leaves
			// it to the next health check.
			_, err = q.NodeGet(ctx, queries.NodeGetParams{ClusterID: cl.ID, Name: nodeName})
			if tt.deleteNode {
				require.ErrorIs(t, err, pgx.ErrNoRows)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// TestCleanupFailsInterruptedNodeOperations: a node operation whose job
// River will not work again (discarded by the rescuer after its last
// attempt, cancelled, or deleted) ends failed; one whose job may still
// run, or that already finished, is left as it is.
func TestCleanupFailsInterruptedNodeOperations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	cl := b.readyCluster(t, "interrupted")
	inserter, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{})
	require.NoError(t, err)

	tests := []struct {
		name   string
		end    func(t *testing.T, jobID int64)
		finish string
		want   string
	}{
		{name: "discarded", want: nodes.OperationFailed, end: func(t *testing.T, id int64) {
			// What River's rescuer writes for a job stuck in its last
			// attempt: it never runs the worker again.
			_, err := b.pool.Exec(ctx, "UPDATE river_job SET state = 'discarded', attempt = max_attempts, finalized_at = now() WHERE id = $1", id)
			require.NoError(t, err)
		}},
		{name: "cancelled", want: nodes.OperationFailed, end: func(t *testing.T, id int64) {
			_, err := inserter.JobCancel(ctx, id)
			require.NoError(t, err)
		}},
		{name: "deleted", want: nodes.OperationFailed, end: func(t *testing.T, id int64) {
			_, err := inserter.JobDelete(ctx, id)
			require.NoError(t, err)
		}},
		{name: "queued", want: nodes.OperationRunning, end: func(*testing.T, int64) {}},
		{name: "finished", finish: nodes.OperationSucceeded, want: nodes.OperationSucceeded, end: func(t *testing.T, id int64) {
			_, err := inserter.JobDelete(ctx, id)
			require.NoError(t, err)
		}},
	}
	ops := make([]queries.NodeOperation, len(tests))
	for i, tt := range tests {
		// As nodes.Service starts one: the row and its job together.
		var jobID int64
		require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			var err error
			ops[i], err = queries.New(tx).NodeOperationCreate(ctx, queries.NodeOperationCreateParams{ClusterID: cl.ID, NodeName: "worker-" + tt.name, Kind: "drain"})
			if err != nil {
				return err
			}
			res, err := inserter.InsertTx(ctx, tx, nodes.OperationArgs{OperationID: ops[i].ID, ClusterID: cl.ID, NodeName: "worker-" + tt.name}, nil)
			if err != nil {
				return err
			}
			jobID = res.Job.ID
			return nil
		}))
		tt.end(t, jobID)
		if tt.finish != "" {
			require.NoError(t, q.NodeOperationFinish(ctx, queries.NodeOperationFinishParams{ID: ops[i].ID, Status: tt.finish}))
		}
	}

	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.CleanupWorker{Pool: b.pool, Logger: b.logger})
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	res, err := w.Work(ctx, t, tx, jobs.CleanupArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)

	for i, tt := range tests {
		op, err := q.NodeOperationGetByID(ctx, ops[i].ID)
		require.NoError(t, err)
		require.Equal(t, tt.want, op.Status, tt.name)
		if tt.want == nodes.OperationFailed {
			require.Contains(t, op.Message, "interrupted", tt.name)
		}
	}
}
