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

// Work implements river.Worker. It reads the switch when it runs, so a
// quick on-off-on ends in the last state whatever order the jobs ran in,
// then paces the cluster's next re-sync (nodequota.SyncCheck): in an
// interval while the quota is on, idle while it is off, backing off while
// the control plane does not answer (which also retries a switch's sync).
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
	// A cluster that is not ready is left alone, whichever way its switch
	// points: its control plane is not there yet, is being changed, has
	// failed, or is going away with everything in it. Removal need not be
	// forced either: when the cluster becomes ready, the reconcile job
	// queues a sync for every cluster whose quota was ever on
	// (ClusterReconcileWorker.markReady), which writes or removes the
	// configuration then.
	if c.Status != clusters.StatusReady || c.DeleteRequestedAt.Valid {
		w.Logger.DebugContext(ctx, "node quota sync skipped: cluster not ready", "cluster_id", c.ID, "status", c.Status)
		return rec.Done(ctx, c.ID, nodequota.SyncCheck, nodequota.SyncInterval, time.Time{}, nil)
	}
	err = w.sync(ctx, c)
	var next time.Time
	if c.NodeQuotaEnabled {
		next = time.Now().Add(nodequota.SyncInterval)
	}
	return rec.Done(ctx, c.ID, nodequota.SyncCheck, nodequota.SyncInterval, next, err)
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

// NodeQuotaRewriteWorker makes the re-sync of every cluster with the quota
// on due now.
type NodeQuotaRewriteWorker struct {
	river.WorkerDefaults[nodequota.RewriteArgs]
	Pool *pgxpool.Pool
}

// Work implements river.Worker.
func (w *NodeQuotaRewriteWorker) Work(ctx context.Context, _ *river.Job[nodequota.RewriteArgs]) error {
	_, err := checks.MakeAllDue(ctx, queries.New(w.Pool), nodequota.SyncCheck)
	return err
}
