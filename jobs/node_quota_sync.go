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
}

// Timeout implements river.Worker: a few API calls.
func (w *NodeQuotaSyncWorker) Timeout(*river.Job[nodequota.SyncArgs]) time.Duration {
	return time.Minute
}

// Work implements river.Worker. It reads the switch when it runs, so a
// quick on-off-on ends in the last state whatever order the jobs ran in.
func (w *NodeQuotaSyncWorker) Work(ctx context.Context, job *river.Job[nodequota.SyncArgs]) error {
	c, err := queries.New(w.Pool).ClusterGetByID(ctx, job.Args.ClusterID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load cluster %d: %w", job.Args.ClusterID, err)
	}
	// A cluster that is not ready is left alone, whichever way its switch
	// points: its control plane is not there yet, is being changed, has
	// failed, or is going away with everything in it. Removal need not be
	// forced either: when the cluster becomes ready, the reconcile job
	// queues a sync for every cluster whose quota was ever on
	// (ClusterReconcileWorker.markReady), which writes or removes the
	// configuration then.
	if c.Status != clusters.StatusReady || c.DeleteRequestedAt.Valid {
		w.Logger.InfoContext(ctx, "node quota sync skipped: cluster not ready", "cluster_id", c.ID, "status", c.Status)
		return nil
	}
	cfg, err := w.VirtualConfig(ctx, c)
	if err != nil {
		return fmt.Errorf("reach cluster %d: %w", c.ID, err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client of cluster %d: %w", c.ID, err)
	}
	api := kc.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if !c.NodeQuotaEnabled {
		err := api.Delete(ctx, nodequota.WebhookName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete node quota webhook of cluster %d: %w", c.ID, err)
		}
		w.Logger.InfoContext(ctx, "node quota webhook removed", "cluster_id", c.ID)
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
		return fmt.Errorf("write node quota webhook of cluster %d: %w", c.ID, err)
	}
	w.Logger.InfoContext(ctx, "node quota webhook written", "cluster_id", c.ID)
	return nil
}

// NodeQuotaSyncAllWorker enqueues the per-cluster syncs.
type NodeQuotaSyncAllWorker struct {
	river.WorkerDefaults[nodequota.SyncAllArgs]
	Pool *pgxpool.Pool
}

// Work implements river.Worker.
func (w *NodeQuotaSyncAllWorker) Work(ctx context.Context, _ *river.Job[nodequota.SyncAllArgs]) error {
	ids, err := queries.New(w.Pool).ClusterListNodeQuotaEnabled(ctx)
	if err != nil {
		return fmt.Errorf("list clusters with node quota: %w", err)
	}
	if len(ids) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		params[i] = river.InsertManyParams{Args: nodequota.SyncArgs{ClusterID: id}, InsertOpts: nodequota.ResyncOpts()}
	}
	if _, err := river.ClientFromContext[pgx.Tx](ctx).InsertMany(ctx, params); err != nil {
		return fmt.Errorf("enqueue node quota syncs: %w", err)
	}
	return nil
}
