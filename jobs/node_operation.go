package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/drain"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/queries"
)

// NodeOperationWorker drains and deletes nodes of virtual clusters, writing its
// progress to the operation's row as it goes.
type NodeOperationWorker struct {
	river.WorkerDefaults[nodes.OperationArgs]
	Pool          *pgxpool.Pool
	Logger        *slog.Logger
	VirtualConfig clusters.VirtualConfigFunc
}

// Timeout implements river.Worker: the drain's own timeout bounds the wait
// for pods; the margin covers the API calls around it.
func (w *NodeOperationWorker) Timeout(job *river.Job[nodes.OperationArgs]) time.Duration {
	if job.Args.Drain == nil {
		return 2 * time.Minute
	}
	return time.Duration(job.Args.Drain.TimeoutSeconds)*time.Second + 2*time.Minute
}

// Work implements river.Worker.
func (w *NodeOperationWorker) Work(ctx context.Context, job *river.Job[nodes.OperationArgs]) error {
	q := queries.New(w.Pool)
	op, err := q.NodeOperationGetByID(ctx, job.Args.OperationID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load node operation %d: %w", job.Args.OperationID, err)
	}
	if op.Status != nodes.OperationRunning {
		return nil
	}
	progress := &progressWriter{ctx: context.WithoutCancel(ctx), q: q, id: op.ID, logger: w.Logger}
	runErr := w.run(ctx, job.Args, progress)
	progress.flush()
	status, message := nodes.OperationSucceeded, ""
	if runErr != nil {
		status, message = nodes.OperationFailed, runErr.Error()
		w.Logger.Warn("node operation failed", "operation_id", op.ID, "cluster_id", op.ClusterID, "node", op.NodeName, "err", runErr)
	}
	if err := q.NodeOperationFinish(context.WithoutCancel(ctx), queries.NodeOperationFinishParams{ID: op.ID, Status: status, Message: message}); err != nil {
		return fmt.Errorf("finish node operation %d: %w", op.ID, err)
	}
	return nil
}

// run does the operation: cordon and drain, then delete.
func (w *NodeOperationWorker) run(ctx context.Context, args nodes.OperationArgs, progress *progressWriter) error {
	c, err := queries.New(w.Pool).ClusterGetByID(ctx, args.ClusterID)
	if err != nil {
		return fmt.Errorf("load cluster %d: %w", args.ClusterID, err)
	}
	cfg, err := w.VirtualConfig(ctx, c)
	if err != nil {
		return fmt.Errorf("reach the cluster: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("cluster client: %w", err)
	}
	if args.Drain != nil {
		err := drainNode(ctx, client, args.NodeName, *args.Drain, progress)
		// A deletion whose Node is gone was done by an earlier attempt
		// whose worker died before it recorded so: the rerun succeeds.
		if errors.Is(err, errNodeGone) && args.DeleteNode {
			progress.line(fmt.Sprintf("node/%s already deleted", args.NodeName))
			w.record(ctx, client, args)
			return nil
		}
		if err != nil {
			return err
		}
	}
	if args.DeleteNode {
		err := client.CoreV1().Nodes().Delete(ctx, args.NodeName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete node %s: %w", args.NodeName, err)
		}
		progress.line(fmt.Sprintf("node/%s deleted", args.NodeName))
	}
	w.record(ctx, client, args)
	return nil
}

// record brings the node's row in the nodes table up to date after the
// operation, so that the nodes page shows the node cordoned or gone at
// once rather than after the next health check. It is not the operation's
// outcome: a failure is logged, and the next health check mends the row.
func (w *NodeOperationWorker) record(ctx context.Context, client kubernetes.Interface, args nodes.OperationArgs) {
	q := queries.New(w.Pool)
	var err error
	if args.DeleteNode {
		err = q.NodeDelete(ctx, queries.NodeDeleteParams{ClusterID: args.ClusterID, Name: args.NodeName})
	} else {
		var n *corev1.Node
		seen := time.Now()
		if n, err = client.CoreV1().Nodes().Get(ctx, args.NodeName, metav1.GetOptions{}); err == nil {
			var p queries.NodeUpsertParams
			if p, err = nodes.Row(args.ClusterID, n, seen); err == nil {
				err = q.NodeUpsert(ctx, p)
			}
		}
	}
	if err != nil {
		w.Logger.Warn("record node after operation", "cluster_id", args.ClusterID, "node", args.NodeName, "err", err)
	}
}

// errNodeGone is a Node deleted before or while it was drained.
var errNodeGone = errors.New("the node no longer exists")

// drainNode cordons the node and evicts its pods, as kubectl drain does.
func drainNode(ctx context.Context, client kubernetes.Interface, name string, opts nodes.DrainOptions, progress *progressWriter) error {
	node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("drain node %s: %w", name, errNodeGone)
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", name, err)
	}
	h := &drain.Helper{
		Ctx: ctx, Client: client,
		IgnoreAllDaemonSets: opts.IgnoreDaemonSets, DeleteEmptyDirData: opts.DeleteEmptyDirData, Force: opts.Force,
		GracePeriodSeconds: opts.GracePeriodSeconds, Timeout: time.Duration(opts.TimeoutSeconds) * time.Second,
		Out: progress, ErrOut: progress,
		OnPodDeletionOrEvictionFinished: func(pod *corev1.Pod, usingEviction bool, err error) {
			verb := "deleted"
			if usingEviction {
				verb = "evicted"
			}
			if err != nil {
				progress.line(fmt.Sprintf("pod/%s in %s not %s: %v", pod.Name, pod.Namespace, verb, err))
				return
			}
			progress.line(fmt.Sprintf("pod/%s in %s %s", pod.Name, pod.Namespace, verb))
		},
	}
	err = drain.RunCordonOrUncordon(h, node, true)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("drain node %s: %w", name, errNodeGone)
	}
	if err != nil {
		return fmt.Errorf("cordon node %s: %w", name, err)
	}
	progress.line(fmt.Sprintf("node/%s cordoned", name))
	if err := drain.RunNodeDrain(h, name); err != nil {
		return fmt.Errorf("drain node %s: %w", name, err)
	}
	progress.line(fmt.Sprintf("node/%s drained", name))
	return nil
}

// progressWriter appends each complete line written to it to the
// operation's progress, which the console polls.
type progressWriter struct {
	ctx    context.Context
	q      *queries.Queries
	id     int64
	logger *slog.Logger

	mu  sync.Mutex
	buf bytes.Buffer
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	p.buf.Write(b)
	var lines []string
	for {
		i := bytes.IndexByte(p.buf.Bytes(), '\n')
		if i < 0 {
			break
		}
		lines = append(lines, string(p.buf.Next(i+1)))
	}
	p.mu.Unlock()
	for _, l := range lines {
		p.line(l)
	}
	return len(b), nil
}

// flush writes what is left of an unfinished line.
func (p *progressWriter) flush() {
	p.mu.Lock()
	rest := p.buf.String()
	p.buf.Reset()
	p.mu.Unlock()
	p.line(rest)
}

// line records one line; losing a progress line must not fail the drain,
// so an error is only logged.
func (p *progressWriter) line(s string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	if err := p.q.NodeOperationAppend(p.ctx, queries.NodeOperationAppendParams{ID: p.id, Line: s}); err != nil {
		p.logger.Warn("record node operation progress", "operation_id", p.id, "err", err)
	}
}
