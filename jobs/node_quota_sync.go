package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// NodeQuotaWebhookName names the ValidatingWebhookConfiguration (and its
// one webhook) that the node quota puts in a virtual cluster.
const (
	NodeQuotaWebhookName = "kubebyon-node-quota"
	nodeQuotaWebhookFQDN = "node-quota.kubebyon.io"
	NodeQuotaWebhookPath = "/webhooks/node-quota/"
)

// NodeQuotaWebhookURL is where a cluster's apiserver sends its Node
// admission reviews. The key is the last path segment: the apiserver
// refuses webhook URLs with a query, and the request log redacts it.
func NodeQuotaWebhookURL(baseURL string, clusterID int64, key string) string {
	return baseURL + NodeQuotaWebhookPath + strconv.FormatInt(clusterID, 10) + "/" + url.PathEscape(key)
}

// NodeQuotaSyncInterval is how often the webhook configurations of the
// ready clusters with the quota on are written again, in case someone
// deleted or changed one, or a control plane came back without it.
const NodeQuotaSyncInterval = 10 * time.Minute

// NodeQuotaSyncArgs asks for a cluster's node quota webhook to match its
// switch: present with the current URL when enabled, absent otherwise.
//
// The job is not unique when the switch or the cluster's becoming ready
// asks for it: River's uniqueness always covers running jobs, so a switch
// flipped while a sync runs (which may have read the switch already)
// would be dropped as a duplicate. Only the periodic re-sync is unique
// (nodeQuotaResyncOpts), as it only repeats what the last one did.
type NodeQuotaSyncArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (NodeQuotaSyncArgs) Kind() string { return "node_quota_sync" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (NodeQuotaSyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueClusters, MaxAttempts: 10}
}

// nodeQuotaResyncOpts make the periodic re-sync of a cluster unique while
// one has not finished (pending, available, scheduled, running or waiting
// for a retry), so that an unreachable cluster does not pile them up.
// Completed jobs are left out of the states, which River allows (it
// requires only the first four): they would block the next period's until
// River's cleaner deleted them. Fewer attempts than a switch's, as the
// next period tries again anyway.
func nodeQuotaResyncOpts() *river.InsertOpts {
	return &river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{
		ByArgs: true,
		ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateRetryable, rivertype.JobStateScheduled,
		},
	}}
}

// NodeQuotaSyncWorker writes or removes the webhook configuration.
type NodeQuotaSyncWorker struct {
	river.WorkerDefaults[NodeQuotaSyncArgs]
	Pool          *pgxpool.Pool
	Logger        *slog.Logger
	Box           *secrets.Box
	VirtualConfig VirtualConfigFunc
	// BaseURL is the platform's public URL the apiserver calls back.
	BaseURL string
	// CABundle is the PEM the apiserver verifies the platform's
	// certificate with; empty means the apiserver's system roots.
	CABundle []byte
}

// Timeout implements river.Worker: a few API calls.
func (w *NodeQuotaSyncWorker) Timeout(*river.Job[NodeQuotaSyncArgs]) time.Duration {
	return time.Minute
}

// Work implements river.Worker. It reads the switch when it runs, so a
// quick on-off-on ends in the last state whatever order the jobs ran in.
func (w *NodeQuotaSyncWorker) Work(ctx context.Context, job *river.Job[NodeQuotaSyncArgs]) error {
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
	if c.Status != "ready" || c.DeleteRequestedAt.Valid {
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
		err := api.Delete(ctx, NodeQuotaWebhookName, metav1.DeleteOptions{})
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
	want := w.configuration(NodeQuotaWebhookURL(w.BaseURL, c.ID, string(key)))
	have, err := api.Get(ctx, NodeQuotaWebhookName, metav1.GetOptions{})
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

// configuration is the webhook: every Node CREATE goes to the platform.
// The failure policy is Ignore: the quota is a plan limit, not a security
// boundary, and a platform outage must never stop the owner's machines
// from (re)joining their cluster; a node let in that way still counts
// against the next one.
func (w *NodeQuotaSyncWorker) configuration(webhookURL string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(5)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: NodeQuotaWebhookName, Labels: map[string]string{"app.kubernetes.io/managed-by": "kubebyon"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: nodeQuotaWebhookFQDN,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL: &webhookURL, CABundle: w.CABundle,
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"nodes"},
				},
			}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          &timeout,
		}},
	}
}

// NodeQuotaSyncAllArgs asks for a NodeQuotaSync job per ready cluster with
// the quota on. It runs periodically on River's leader; after a restart
// with a new base URL or CA bundle, the configurations carry the new ones
// within an interval.
type NodeQuotaSyncAllArgs struct{}

// Kind implements river.JobArgs.
func (NodeQuotaSyncAllArgs) Kind() string { return "node_quota_sync_all" }

// NodeQuotaSyncAllWorker enqueues the per-cluster syncs.
type NodeQuotaSyncAllWorker struct {
	river.WorkerDefaults[NodeQuotaSyncAllArgs]
	Pool *pgxpool.Pool
}

// Work implements river.Worker.
func (w *NodeQuotaSyncAllWorker) Work(ctx context.Context, _ *river.Job[NodeQuotaSyncAllArgs]) error {
	ids, err := queries.New(w.Pool).ClusterListNodeQuotaEnabled(ctx)
	if err != nil {
		return fmt.Errorf("list clusters with node quota: %w", err)
	}
	if len(ids) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		params[i] = river.InsertManyParams{Args: NodeQuotaSyncArgs{ClusterID: id}, InsertOpts: nodeQuotaResyncOpts()}
	}
	if _, err := river.ClientFromContext[pgx.Tx](ctx).InsertMany(ctx, params); err != nil {
		return fmt.Errorf("enqueue node quota syncs: %w", err)
	}
	return nil
}
