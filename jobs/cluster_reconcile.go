package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/controlplane"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/kubeadm"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/queries"
)

// leaseCallTimeout bounds the calls that take and give back a cluster's
// lease, which run to the end even when the job's context ends.
const leaseCallTimeout = 10 * time.Second

// ClusterReconcileWorker drives the host cluster toward a cluster's row:
// namespace, license Secret, Helm release, then waits for the control plane
// by snoozing (never sleeping); or, once deletion is asked for, removes the
// release and the namespace; or, for a cluster an admin suspended or
// resumed, scales its control plane to 0 and back (cluster_suspension.go). Every step is idempotent, so a worker killed
// anywhere leaves nothing the next run cannot finish.
type ClusterReconcileWorker struct {
	river.WorkerDefaults[clusters.ReconcileArgs]
	Pool   *pgxpool.Pool
	Logger *slog.Logger
	Box    *secrets.Box
	Charts *vcluster.Charts
	// KubeconfigPath is KUBEBYON_KUBECONFIG.
	KubeconfigPath string
	// PollInterval is how long a job snoozes between readiness checks.
	PollInterval time.Duration
	// ReadyTimeout is how long a generation may take to become ready before
	// the cluster is marked failed.
	ReadyTimeout time.Duration
	// StepTimeout bounds one attempt (DefaultClusterStepTimeout when zero).
	StepTimeout time.Duration
}

// DefaultClusterStepTimeout bounds one attempt of a cluster reconcile: API
// calls and one Helm operation, never a long wait.
const DefaultClusterStepTimeout = 5 * time.Minute

// Timeout implements river.Worker. River's rescuer waits for it too before
// it runs again a job whose worker died.
func (w *ClusterReconcileWorker) Timeout(*river.Job[clusters.ReconcileArgs]) time.Duration {
	return cmp.Or(w.StepTimeout, DefaultClusterStepTimeout)
}

// Work implements river.Worker.
func (w *ClusterReconcileWorker) Work(ctx context.Context, job *river.Job[clusters.ReconcileArgs]) error {
	// One job per cluster at a time, through a lease on the row that
	// outlives no job: it ends shortly after the job's timeout if the job
	// dies. River's rescuer runs the dead job again (same id, so it takes
	// its lease back at once); any other job waits for the lease to end.
	q := queries.New(w.Pool)
	release, err := takeLease(ctx, w.Logger, fmt.Sprintf("cluster %d", job.Args.ClusterID),
		func(ctx context.Context) (int64, error) {
			return q.ClusterTakeReconcileLease(ctx, queries.ClusterTakeReconcileLeaseParams{ClusterID: job.Args.ClusterID, JobID: job.ID, Seconds: int32(w.Timeout(job)/time.Second) + 30})
		},
		func(ctx context.Context) error {
			return q.ClusterReleaseReconcileLease(ctx, queries.ClusterReleaseReconcileLeaseParams{ClusterID: job.Args.ClusterID, JobID: job.ID})
		})
	if err != nil {
		return err
	}
	defer release()

	c, err := q.ClusterGetByID(ctx, job.Args.ClusterID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load cluster %d: %w", job.Args.ClusterID, err)
	}
	if c.Status == clusters.StatusDeleted {
		return nil
	}
	// Ready at the generation asked for: another job finished the work (a
	// Retry racing River's own retry of the failure, or a rescued job), and
	// running it again would only flip the cluster through "updating".
	if c.Status == clusters.StatusReady && c.ObservedGeneration == c.Generation && !c.DeleteRequestedAt.Valid {
		return nil
	}
	logger := w.Logger.With("cluster_id", c.ID, "slug", c.Slug, "generation", c.Generation, "attempt", job.Attempt)

	rt, err := settings.Load(ctx, q, w.Box)
	if err != nil {
		return err
	}
	// A suspension is not failed by a host that does not answer: that
	// would end it, and River's retries carry it out once the host is back.
	if clusters.Suspended(c) && !c.DeleteRequestedAt.Valid {
		h, err := w.host(rt)
		if err != nil {
			return fmt.Errorf("suspension of cluster %d: %w", c.ID, err)
		}
		if c.Status == clusters.StatusSuspended {
			return w.suspend(ctx, q, c, h, logger)
		}
		return w.resume(ctx, q, c, rt, h, logger)
	}
	h, err := w.host(rt)
	if err != nil {
		return w.fail(ctx, q, c, "HostUnreachable", err)
	}

	if c.DeleteRequestedAt.Valid {
		return w.remove(ctx, q, c, h, logger)
	}
	return w.apply(ctx, q, c, rt, h, logger)
}

// host is the host cluster's clients, their calls bounded.
func (w *ClusterReconcileWorker) host(rt settings.Runtime) (controlplane.Host, error) {
	hostCfg, err := rt.HostConfig(w.KubeconfigPath)
	if err != nil {
		return controlplane.Host{}, err
	}
	hostCfg = rest.CopyConfig(hostCfg)
	hostCfg.Timeout = 30 * time.Second
	return controlplane.NewHost(hostCfg)
}

// ensureJoinSide makes in the cluster's control plane what kubeadm join
// needs there (kubeadm.Ensure), through the admin kubeconfig the backend
// wrote: cluster-info names the public endpoint and the cluster's CA.
func (w *ClusterReconcileWorker) ensureJoinSide(ctx context.Context, h controlplane.Host, c queries.Cluster, rt settings.Runtime) error {
	raw, err := clusters.ReadAdminKubeconfig(ctx, h.Client, c)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return fmt.Errorf("parse the admin kubeconfig: %w", err)
	}
	cfg.Timeout = 30 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("control plane client: %w", err)
	}
	podCIDR := rt.PodCIDR
	if c.PodCidr.IsValid() {
		podCIDR = c.PodCidr.String()
	}
	if err := kubeadm.Ensure(ctx, client, kubeadm.Cluster{
		Server: "https://" + rt.PublicEndpoint(c.Slug), CA: cfg.CAData,
		Name: c.Name, KubernetesVersion: c.KubernetesVersion,
		PodCIDR: podCIDR, ServiceCIDR: rt.ServiceCIDR,
	}); err != nil {
		return fmt.Errorf("prepare the control plane for kubeadm join: %w", err)
	}
	return nil
}

// installEnv is what a backend's install needs from the platform: for a
// Kamaji cluster in NodePort mode, the address of a Ready host node (of
// the type the edge sends to), which Kamaji advertises inside the
// cluster.
func (w *ClusterReconcileWorker) installEnv(ctx context.Context, q *queries.Queries, c queries.Cluster, rt settings.Runtime) (controlplane.Env, error) {
	var env controlplane.Env
	if c.Backend != settings.BackendKamaji || c.PublicAccessMode != settings.AccessNodePort {
		return env, nil
	}
	hosts, err := q.HostNodesReady(ctx)
	if err != nil {
		return env, fmt.Errorf("list the Ready host nodes: %w", err)
	}
	for _, n := range hosts {
		if a := rt.EdgeAddress(n.InternalIp, n.ExternalIp); a != "" {
			env.HostAddress = a
			break
		}
	}
	return env, nil
}

func (w *ClusterReconcileWorker) apply(ctx context.Context, q *queries.Queries, c queries.Cluster, rt settings.Runtime, h controlplane.Host, logger *slog.Logger) error {
	// A first install provisions; a change of a cluster that was ready
	// updates (its "Updated" event was written with the change).
	status := clusters.StatusProvisioning
	if c.ObservedGeneration > 0 {
		status = clusters.StatusUpdating
	}
	if c.Status != status || !c.ReconcileStartedAt.Valid {
		if err := q.ClusterStartReconcile(ctx, queries.ClusterStartReconcileParams{ID: c.ID, Status: status}); err != nil {
			return fmt.Errorf("start reconcile: %w", err)
		}
		if c.Status != status && status == clusters.StatusProvisioning {
			if err := w.event(ctx, q, c, "info", "Provisioning", ""); err != nil {
				return err
			}
		}
		// Installed all the same: the admin may connect a platform later.
		if c.Backend == settings.BackendVCluster && !rt.Licensed() {
			if err := w.event(ctx, q, c, "warning", "NoLicense", ""); err != nil {
				return err
			}
		}
		var err error
		if c, err = q.ClusterGetByID(ctx, c.ID); err != nil {
			return fmt.Errorf("reload cluster: %w", err)
		}
	}

	if err := vcluster.EnsureNamespace(ctx, h.Client, c); err != nil {
		return w.fail(ctx, q, c, hostReason(err), err)
	}
	backend := controlplane.For(c, w.Charts)
	env, err := w.installEnv(ctx, q, c, rt)
	if err != nil {
		return err
	}
	installed, err := backend.Install(ctx, h, c, rt, env, logger)
	if err != nil {
		return w.fail(ctx, q, c, hostReason(err), err)
	}
	if installed.Reason != "" {
		if err := w.event(ctx, q, c, "info", installed.Reason, installed.Message); err != nil {
			return err
		}
	}

	ready, waiting, err := backend.Status(ctx, h, c)
	if err != nil {
		return w.fail(ctx, q, c, hostReason(err), err)
	}
	// What the cluster waits for: its control plane, then, in
	// LoadBalancer mode, the address the edge sends its connections to.
	reason := "WaitingForControlPlane"
	if ready {
		waiting = ""
	}
	if ready && c.PublicAccessMode == settings.AccessLoadBalancer {
		svc, err := vcluster.ControlPlaneService(ctx, h.Client, c)
		if err != nil {
			return w.fail(ctx, q, c, hostReason(err), err)
		}
		addr := vcluster.LoadBalancerAddress(svc)
		if addr == "" {
			waiting, reason = "the host has not given the control plane's LoadBalancer Service an address yet", "WaitingForLoadBalancer"
		} else if _, err := q.ClusterSetLBAddress(ctx, queries.ClusterSetLBAddressParams{ID: c.ID, LbAddress: addr}); err != nil {
			return fmt.Errorf("record the load balancer's address: %w", err)
		}
	}
	// Once it serves, what kubeadm's join needs on the control plane's
	// side, before the cluster is ready and join commands are handed
	// out. A control plane the platform cannot reach yet is waited for.
	if waiting == "" {
		if err := w.ensureJoinSide(ctx, h, c, rt); err != nil {
			waiting, reason = err.Error(), "WaitingForControlPlane"
		}
	}
	if waiting != "" {
		if c.ReconcileStartedAt.Valid && time.Since(c.ReconcileStartedAt.Time) > w.ReadyTimeout {
			msg := fmt.Sprintf("the control plane did not become ready within %s (%s)", w.ReadyTimeout, waiting)
			logger.Warn("cluster failed: not ready in time", "timeout", w.ReadyTimeout, "waiting_for", waiting)
			if err := q.ClusterMarkFailed(ctx, queries.ClusterMarkFailedParams{ID: c.ID, StatusMessage: msg}); err != nil {
				return fmt.Errorf("mark failed: %w", err)
			}
			if err := w.noticeFailure(ctx, c, msg); err != nil {
				return err
			}
			// Nothing to retry on its own: the user retries from the console.
			return w.event(ctx, q, c, "error", "Failed", msg)
		}
		if err := w.event(ctx, q, c, "info", reason, waiting); err != nil {
			return err
		}
		return river.JobSnooze(w.PollInterval)
	}

	marked, err := w.markReady(ctx, c, rt.PublicEndpoint(c.Slug))
	if err != nil {
		return err
	}
	if !marked {
		// The row changed while we worked: go again for the new generation.
		return river.JobSnooze(0)
	}
	logger.Info("cluster ready")
	return nil
}

// readyStep is one thing that happens when a cluster becomes ready, in
// the transaction tx that marks it ready (with the job's River client in
// ctx). c is the cluster's row as read in tx under its lock, before the
// update: its ID, name and owner never change, and its node quota switch
// is as this transaction sees it.
type readyStep func(ctx context.Context, tx pgx.Tx, box *secrets.Box, c queries.Cluster) error

// onReady is what happens, in this order, when a cluster becomes ready:
// on the transition to ready only (not again for a generation already
// ready), all in the transaction that marks it ready (markReady). An
// error rolls it all back, the cluster's status included, and River
// retries the job. Nothing happens after the commit. Each step lives in
// the package of its feature, with the why in its doc comment; a feature
// that follows a cluster becoming ready adds its step here.
var onReady = []readyStep{
	nodes.ScheduleHealthCheck, // its nodes are checked from now on
	jointokens.ScheduleSync,   // its join tokens synced
	metrics.ScheduleScrape,    // its control plane scraped
	ingress.QueueReconcile,    // its managed ingress, if any, reconciled
	nodequota.SwitchOnOrSync,  // its node quota switched on, or synced
	notify.TellClusterReady,   // its owner told
	clusters.RecordReady,      // "Ready" on its timeline
}

// markReady records that the cluster's control plane is ready in one
// transaction that, on the transition to ready only, also runs the steps
// of onReady. The row is locked first, so two jobs can never both see the
// transition. It reports false when the cluster's generation moved on.
func (w *ClusterReconcileWorker) markReady(ctx context.Context, c queries.Cluster, endpoint string) (bool, error) {
	ready := false
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		// Locked before the update: the node quota job switching the quota
		// on meanwhile (NodeQuotaRewriteWorker) either committed before and
		// shows here, or waits for this transaction and then finds it on.
		prev, err := q.ClusterLock(ctx, c.ID)
		if err != nil {
			return fmt.Errorf("lock cluster: %w", err)
		}
		n, err := q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: c.ID, Endpoint: endpoint, Generation: c.Generation})
		if err != nil {
			return fmt.Errorf("mark ready: %w", err)
		}
		if n == 0 {
			return nil
		}
		ready = true
		if prev.Status == clusters.StatusReady && prev.ObservedGeneration == c.Generation {
			return nil
		}
		for _, step := range onReady {
			if err := step(ctx, tx, w.Box, prev); err != nil {
				return err
			}
		}
		return nil
	})
	return ready, err
}

func (w *ClusterReconcileWorker) remove(ctx context.Context, q *queries.Queries, c queries.Cluster, h controlplane.Host, logger *slog.Logger) error {
	if c.Status != clusters.StatusDeleting {
		if err := q.ClusterSetStatus(ctx, queries.ClusterSetStatusParams{ID: c.ID, Status: clusters.StatusDeleting}); err != nil {
			return fmt.Errorf("mark deleting: %w", err)
		}
	}
	// Said once, when the work on the deletion starts (right after it was
	// asked for): the waits that follow count on their own event rather
	// than alternate with this one.
	if last, err := q.ClusterEventLatest(ctx, c.ID); err == nil && last.Reason == "DeleteRequested" {
		if err := w.event(ctx, q, c, "info", "Deleting", ""); err != nil {
			return err
		}
	} else if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("latest cluster event: %w", err)
	}
	removed, err := controlplane.For(c, w.Charts).Remove(ctx, h, c, logger)
	if err != nil {
		return w.fail(ctx, q, c, hostReason(err), err)
	}
	if removed {
		if err := w.event(ctx, q, c, "info", "Uninstalled", ""); err != nil {
			return err
		}
	}
	gone, err := vcluster.DeleteNamespace(ctx, h.Client, c)
	if err != nil {
		return w.fail(ctx, q, c, hostReason(err), err)
	}
	if !gone {
		if err := w.event(ctx, q, c, "info", "WaitingForNamespace", vcluster.Namespace(c)); err != nil {
			return err
		}
		return river.JobSnooze(w.PollInterval)
	}
	if err := q.ClusterMarkDeleted(ctx, c.ID); err != nil {
		return fmt.Errorf("mark deleted: %w", err)
	}
	// Its DNS records go too (jobs that retry until the DNS answers).
	if err := dnsrecords.Schedule(ctx, q, c.ID); err != nil {
		return err
	}
	for _, kind := range []checks.Kind{checks.IngressDNS, checks.IngressHostnames, checks.IngressEdge} {
		if err := checks.Schedule(ctx, q, c.ID, kind, time.Now()); err != nil {
			return err
		}
	}
	logger.Info("cluster deleted")
	return w.event(ctx, q, c, "info", "Deleted", "")
}

// fail records a failure the console shows, then returns it so that River
// retries with backoff: a host that comes back lets a later attempt finish.
func (w *ClusterReconcileWorker) fail(ctx context.Context, q *queries.Queries, c queries.Cluster, reason string, cause error) error {
	msg := cause.Error()
	if errors.Is(cause, settings.ErrNoHostCluster) {
		msg = "no host cluster is configured: an admin connects one in Admin → Settings"
	}
	if err := q.ClusterMarkFailed(ctx, queries.ClusterMarkFailedParams{ID: c.ID, StatusMessage: msg}); err != nil {
		return fmt.Errorf("mark failed: %w (after: %v)", err, cause)
	}
	if err := w.noticeFailure(ctx, c, msg); err != nil {
		return fmt.Errorf("%w (after: %v)", err, cause)
	}
	if err := w.event(ctx, q, c, "error", reason, msg); err != nil {
		return fmt.Errorf("%w (after: %v)", err, cause)
	}
	return fmt.Errorf("reconcile cluster %d: %w", c.ID, cause)
}

// noticeFailure tells the organization that the cluster failed, once per failure:
// River's retries of it find the notice claimed until the cluster is
// ready again, retried or changed.
func (w *ClusterReconcileWorker) noticeFailure(ctx context.Context, c queries.Cluster, msg string) error {
	return pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		claimed, err := q.ClusterClaimFailureNotice(ctx, c.ID)
		if err != nil {
			return fmt.Errorf("claim failure notice of cluster %d: %w", c.ID, err)
		}
		if claimed == 0 {
			return nil
		}
		_, err = notify.Notices{Box: w.Box}.TellCluster(ctx, tx, c, notify.ClusterFailed, notify.EmailClusterFailed, map[string]any{"Reason": msg, notify.ReasonMessage: clusters.FailureMessage(msg)})
		return err
	})
}

// event appends a cluster event, or counts it on the newest one when that
// says the same, so that snoozes and retries do not repeat themselves in
// the timeline.
func (w *ClusterReconcileWorker) event(ctx context.Context, q *queries.Queries, c queries.Cluster, level, reason, message string) error {
	return clusters.Event(ctx, q, c.ID, level, reason, message)
}

// takeLease takes a row's lease for one job with take, and returns the
// function that gives it back (give). A lease outlives no job: it ends
// shortly after the job's timeout if the job dies. River's rescuer runs
// the dead job again (same id, so it takes its lease back at once); any
// other job waits for the lease to end: takeLease then returns a snooze of
// a second.
//
// The lease is taken whole even when the job's context ends meanwhile: a
// call cancelled in flight may still take the lease on the server after
// this job gave up, leaving it to expire before another job can work the
// row; so it is given back then too.
func takeLease(ctx context.Context, logger *slog.Logger, name string, take func(context.Context) (int64, error), give func(context.Context) error) (func(), error) {
	release := func() {
		giveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseCallTimeout)
		defer cancel()
		if err := give(giveCtx); err != nil {
			logger.Warn("release lease", "lease", name, "error", err)
		}
	}
	takeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseCallTimeout)
	taken, err := take(takeCtx)
	cancel()
	if err != nil {
		release()
		return nil, fmt.Errorf("lease %s: %w", name, err)
	}
	if ctx.Err() != nil {
		release()
		return nil, fmt.Errorf("lease %s: %w", name, ctx.Err())
	}
	if taken == 0 {
		return nil, river.JobSnooze(time.Second)
	}
	return release, nil
}

// hostReason tells an unreachable host from other failures.
func hostReason(err error) string {
	var netErr net.Error
	if errors.As(err, &netErr) {
		return "HostUnreachable"
	}
	return "Failed"
}
