package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// NodeQuotaSyncWorker writes or removes the webhook configuration.
type NodeQuotaSyncWorker struct {
	river.WorkerDefaults[nodequota.SyncArgs]
	Pool          *pgxpool.Pool
	Logger        *slog.Logger
	Box           *secrets.Box
	VirtualConfig clusters.VirtualConfigFunc
	// BaseURL is the platform's public URL the apiserver calls back.
	BaseURL string
	// CABundle is the PEM the apiserver verifies the platform's
	// certificate with; empty means the apiserver's system roots.
	CABundle []byte
	// Transitions logs the clusters going unreachable and back.
	Transitions *checks.Transitions
}

// Timeout implements river.Worker: a few API calls.
func (w *NodeQuotaSyncWorker) Timeout(*river.Job[nodequota.SyncArgs]) time.Duration {
	return time.Minute
}

// Work implements river.Worker. It reads the switch when it runs, so
// that jobs worked in any order end in its last state, then paces the
// cluster's next re-sync (checks.NodeQuotaSync): in an interval while the
// quota is on, idle while it is off (a cluster ready from before the
// platform switched it on, until NodeQuotaRewriteWorker does), backing off
// while the control plane does not answer (which also retries the sync
// queued when the quota was switched on).
func (w *NodeQuotaSyncWorker) Work(ctx context.Context, job *river.Job[nodequota.SyncArgs]) error {
	q := queries.New(w.Pool)
	c, err := q.ClusterGetByID(ctx, job.Args.ClusterID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load cluster %d: %w", job.Args.ClusterID, err)
	}
	rec := checks.Recorder{Q: q, Log: w.Transitions}
	// A cluster that is not ready is left alone: its control plane is not
	// there yet, is being changed, has failed, or is going away with
	// everything in it. When it becomes ready, the reconcile job switches
	// its quota on or queues a sync (nodequota.SwitchOnOrSync, on ready),
	// which writes the configuration then.
	if c.Status != clusters.StatusReady || c.DeleteRequestedAt.Valid {
		w.Logger.DebugContext(ctx, "node quota sync skipped: cluster not ready", "cluster_id", c.ID, "status", c.Status)
		return rec.Done(ctx, c.ID, checks.NodeQuotaSync, nodequota.SyncInterval, time.Time{}, nil)
	}
	err = w.sync(ctx, c)
	var next time.Time
	if c.NodeQuotaEnabled {
		next = time.Now().Add(nodequota.SyncInterval)
	}
	return rec.Done(ctx, c.ID, checks.NodeQuotaSync, nodequota.SyncInterval, next, err)
}

// sync writes or removes the configuration; errors reaching the control
// plane are checks.UnreachableError.
func (w *NodeQuotaSyncWorker) sync(ctx context.Context, c queries.Cluster) error {
	cfg, err := w.VirtualConfig(ctx, c)
	if err != nil {
		return checks.Unreachable(fmt.Errorf("reach cluster %d: %w", c.ID, err))
	}
	cfg = checks.Bounded(cfg)
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client of cluster %d: %w", c.ID, err)
	}
	api := kc.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if !c.NodeQuotaEnabled {
		err := api.Delete(ctx, nodequota.WebhookName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return checks.Unreachable(fmt.Errorf("delete node quota webhook of cluster %d: %w", c.ID, err))
		}
		w.Logger.DebugContext(ctx, "node quota webhook removed", "cluster_id", c.ID)
		return nil
	}
	key, err := w.Box.Open(c.NodeQuotaSecret)
	if err != nil {
		return fmt.Errorf("open node quota key of cluster %d: %w", c.ID, err)
	}
	want := nodequota.WebhookConfiguration(nodequota.WebhookURL(w.BaseURL, c.ID, string(key)), w.CABundle)
	have, err := api.Get(ctx, nodequota.WebhookName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, want, metav1.CreateOptions{})
	case err == nil:
		want.ResourceVersion = have.ResourceVersion
		_, err = api.Update(ctx, want, metav1.UpdateOptions{})
	}
	if err != nil {
		return checks.Unreachable(fmt.Errorf("write node quota webhook of cluster %d: %w", c.ID, err))
	}
	w.Logger.DebugContext(ctx, "node quota webhook written", "cluster_id", c.ID)
	return nil
}

// nodeQuotaEnableBatch is how many clusters the rewrite switches the
// node quota on in one transaction.
const nodeQuotaEnableBatch = 100

// NodeQuotaRewriteWorker makes the re-sync of every cluster with the quota
// on due now, then switches the quota on in the ready clusters without it:
// those that were ready before the platform switched it on in every
// cluster that becomes ready, or whose owner switched it off when they
// could.
type NodeQuotaRewriteWorker struct {
	river.WorkerDefaults[nodequota.RewriteArgs]
	Pool   *pgxpool.Pool
	Box    *secrets.Box
	Logger *slog.Logger
}

// Timeout implements river.Worker: the first run after an upgrade may
// switch on thousands of clusters' quotas. Each batch commits, so a run
// cut short leaves the rest to its retry.
func (w *NodeQuotaRewriteWorker) Timeout(*river.Job[nodequota.RewriteArgs]) time.Duration {
	return 10 * time.Minute
}

// Work implements river.Worker. The re-syncs are made due first: a
// cluster switched on here has its sync queued already.
func (w *NodeQuotaRewriteWorker) Work(ctx context.Context, _ *river.Job[nodequota.RewriteArgs]) error {
	if _, err := checks.MakeAllDue(ctx, queries.New(w.Pool), checks.NodeQuotaSync); err != nil {
		return err
	}
	rc := river.ClientFromContext[pgx.Tx](ctx)
	var after int64
	switched := 0
	for {
		var n int
		err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
			batch, err := queries.New(tx).ClusterListNodeQuotaMissing(ctx, queries.ClusterListNodeQuotaMissingParams{AfterID: after, RowLimit: nodeQuotaEnableBatch})
			if err != nil {
				return fmt.Errorf("list clusters without node quota: %w", err)
			}
			n = len(batch)
			for _, c := range batch {
				on, err := nodequota.EnableTx(ctx, tx, rc, w.Box, c)
				if err != nil {
					return err
				}
				if on {
					switched++
				}
				after = c.ID
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n < nodeQuotaEnableBatch {
			break
		}
	}
	if switched > 0 {
		w.Logger.InfoContext(ctx, "node quota switched on by the platform", "clusters", switched)
	}
	return nil
}
