package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// NodeHealthWorker records one ready cluster's nodes in the nodes table
// and tells the owner once per episode when a node has been NotReady for
// longer than Threshold, and again when it recovers; then it paces the
// cluster's next check (checks.NodeHealth): due in Interval, or backing
// off while the control plane does not answer (the nodes keep their last
// snapshot, and the console says since when it has been unreachable). The
// claims on the table are atomic, so overlapping runs never tell twice.
type NodeHealthWorker struct {
	river.WorkerDefaults[nodes.HealthArgs]
	Pool          *pgxpool.Pool
	Logger        *slog.Logger
	Box           *secrets.Box
	VirtualConfig clusters.VirtualConfigFunc
	Threshold     time.Duration
	// Interval is how often a cluster that answers is checked (default
	// nodes.HealthInterval); IngressInterval how often one whose managed
	// ingress is on (default nodes.IngressHealthInterval).
	Interval, IngressInterval time.Duration
	// Transitions logs the clusters going unreachable and back.
	Transitions *checks.Transitions
}

// Timeout implements river.Worker: a few calls of checks.CallTimeout each.
func (w *NodeHealthWorker) Timeout(*river.Job[nodes.HealthArgs]) time.Duration {
	return time.Minute
}

// Work implements river.Worker.
func (w *NodeHealthWorker) Work(ctx context.Context, job *river.Job[nodes.HealthArgs]) error {
	q := queries.New(w.Pool)
	c, err := q.ClusterGetByID(ctx, job.Args.ClusterID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load cluster %d: %w", job.Args.ClusterID, err)
	}
	interval := cmp.Or(w.Interval, nodes.HealthInterval)
	rec := checks.Recorder{Q: q, Log: w.Transitions}
	if c.Status != clusters.StatusReady {
		// Checked again once it is ready (nodes.ScheduleHealthCheck).
		return rec.Done(ctx, c.ID, checks.NodeHealth, interval, time.Time{}, nil)
	}
	watched, err := q.IngressWatchesNodes(ctx, c.ID)
	if err != nil {
		return fmt.Errorf("managed ingress of cluster %d: %w", c.ID, err)
	}
	if watched {
		interval = min(interval, cmp.Or(w.IngressInterval, nodes.IngressHealthInterval))
	}
	err = w.snapshot(ctx, c)
	if err == nil {
		err = w.notify(ctx, c)
	}
	return rec.Done(ctx, c.ID, checks.NodeHealth, interval, time.Now().Add(interval), err)
}

// snapshot writes the cluster's nodes to the table and forgets the ones
// gone from the cluster.
func (w *NodeHealthWorker) snapshot(ctx context.Context, c queries.Cluster) error {
	cfg, err := w.VirtualConfig(ctx, c)
	if err != nil {
		return checks.Unreachable(fmt.Errorf("reach the cluster: %w", err))
	}
	cfg = checks.Bounded(cfg)
	// The core group only: a full clientset builds some fifty.
	client, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("cluster client: %w", err)
	}
	// The rows say the nodes were seen when the list was asked for: a
	// row the console wrote after acting on a node since is newer, and kept.
	seen := time.Now()
	list, err := client.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return checks.Unreachable(fmt.Errorf("list nodes: %w", err))
	}
	if c.StaleNodeCleanupHours.Valid {
		if list.Items, err = w.removeStale(ctx, client, c, list.Items); err != nil {
			return err
		}
	}
	return pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		names := make([]string, 0, len(list.Items))
		for i := range list.Items {
			p, err := nodes.Row(c.ID, &list.Items[i], seen)
			if err != nil {
				return err
			}
			if err := q.NodeUpsert(ctx, p); err != nil {
				return fmt.Errorf("record node %s: %w", p.Name, err)
			}
			names = append(names, p.Name)
		}
		if err := q.NodeDeleteGone(ctx, queries.NodeDeleteGoneParams{ClusterID: c.ID, Names: names}); err != nil {
			return fmt.Errorf("forget deleted nodes: %w", err)
		}
		// A node gone NotReady, back, or readdressed changes the CNAME
		// target's records now, not at their next check.
		return ingress.ScheduleDNSIfStale(ctx, q, c.ID)
	})
}

// removeStale deletes the nodes NotReady for longer than the cluster's
// clean-up period, each with an audit event, and returns the others.
func (w *NodeHealthWorker) removeStale(ctx context.Context, client corev1client.NodesGetter, c queries.Cluster, list []corev1.Node) ([]corev1.Node, error) {
	limit := time.Duration(c.StaleNodeCleanupHours.Int32) * time.Hour
	kept := list[:0]
	for i := range list {
		n := &list[i]
		readiness, since := nodes.Readiness(n)
		if readiness == nodes.Ready || since.IsZero() || time.Since(since) < limit {
			kept = append(kept, *n)
			continue
		}
		err := client.Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, checks.Unreachable(fmt.Errorf("delete stale node %s: %w", n.Name, err))
		}
		if err := audit.Record(ctx, queries.New(w.Pool), audit.Actor{Email: "system"}, audit.Event{
			Action: "node.stale_delete", TargetType: "cluster", TargetID: fmt.Sprint(c.ID),
			Details: map[string]any{"node": n.Name, "not_ready_since": since.UTC(), "after_hours": c.StaleNodeCleanupHours.Int32},
		}); err != nil {
			return nil, err
		}
		w.Logger.Info("deleted stale node", "cluster_id", c.ID, "node", n.Name, "not_ready_since", since)
	}
	return kept, nil
}

// notify raises the alerts of nodes NotReady past the threshold and the
// recoveries of alerted nodes, each with its notifications in the same
// transaction as its claim.
func (w *NodeHealthWorker) notify(ctx context.Context, c queries.Cluster) error {
	return pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		alerts, err := q.NodeClaimAlert(ctx, queries.NodeClaimAlertParams{
			ClusterID: c.ID, Since: pgtype.Timestamptz{Time: time.Now().Add(-w.Threshold), Valid: true},
		})
		if err != nil {
			return fmt.Errorf("claim node alerts: %w", err)
		}
		for _, n := range alerts {
			id, err := w.tell(ctx, tx, c, n.Name, notify.EmailNodeNotReady)
			if err != nil {
				return err
			}
			if err := q.NodeSetAlertNotification(ctx, queries.NodeSetAlertNotificationParams{
				ClusterID: c.ID, Name: n.Name, NotificationID: pgtype.Int8{Int64: id, Valid: id != 0},
			}); err != nil {
				return fmt.Errorf("record alert of node %s: %w", n.Name, err)
			}
		}
		recovered, err := q.NodeClaimRecovered(ctx, c.ID)
		if err != nil {
			return fmt.Errorf("claim node recoveries: %w", err)
		}
		for _, n := range recovered {
			// The NotReady notifications are dealt with: mark them read.
			if n.AlertNotificationID.Valid {
				if err := q.NotificationMarkReadEvent(ctx, queries.NotificationMarkReadEventParams{ID: n.AlertNotificationID.Int64, OrgID: c.OrgID}); err != nil {
					return fmt.Errorf("clear alert of node %s: %w", n.Name, err)
				}
			}
			if _, err := w.tell(ctx, tx, c, n.Name, notify.EmailNodeRecovered); err != nil {
				return err
			}
		}
		return nil
	})
}

// tell tells the cluster's organization about a node, each member as
// their preferences for NotReady nodes say (notify.TellCluster); it
// returns an in-app notification's id, or 0.
func (w *NodeHealthWorker) tell(ctx context.Context, tx pgx.Tx, c queries.Cluster, node, template string) (int64, error) {
	data := map[string]any{"Node": node, "Minutes": int(w.Threshold.Minutes())}
	return notify.Notices{Box: w.Box}.TellCluster(ctx, tx, c, notify.NodeNotReady, template, data)
}
