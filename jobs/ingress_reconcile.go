package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/helm"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// IngressReconcileWorker drives a cluster's managed ingress toward its
// switch: on, it installs or upgrades the controller the settings name in
// the virtual cluster and waits for its DaemonSet to roll out by snoozing;
// off, it removes what it installed. Every step is idempotent, and one job
// works a cluster at a time (a lease on its cluster_ingress row). It writes
// where it stands to the row and the cluster's timeline.
type IngressReconcileWorker struct {
	river.WorkerDefaults[ingress.ReconcileArgs]
	Pool          *pgxpool.Pool
	Logger        *slog.Logger
	VirtualConfig clusters.VirtualConfigFunc
	Charts        *helm.Charts
	// Box seals the emails' data.
	Box *secrets.Box
	// PollInterval is how long a job snoozes between rollout checks.
	PollInterval time.Duration
	// RolloutTimeout is how long the controller may take to run on every
	// node it should before the install is marked failed.
	RolloutTimeout time.Duration
}

// DefaultIngressRolloutTimeout is how long a controller's rollout may take.
const DefaultIngressRolloutTimeout = 10 * time.Minute

// Timeout implements river.Worker: API calls and one Helm operation.
func (w *IngressReconcileWorker) Timeout(*river.Job[ingress.ReconcileArgs]) time.Duration {
	return 3 * time.Minute
}

// Work implements river.Worker.
func (w *IngressReconcileWorker) Work(ctx context.Context, job *river.Job[ingress.ReconcileArgs]) error {
	q := queries.New(w.Pool)
	id := job.Args.ClusterID
	release, err := takeLease(ctx, w.Logger, fmt.Sprintf("managed ingress of cluster %d", id),
		func(ctx context.Context) (int64, error) {
			return q.IngressTakeLease(ctx, queries.IngressTakeLeaseParams{ClusterID: id, JobID: job.ID, Seconds: int32(w.Timeout(job)/time.Second) + 30})
		},
		func(ctx context.Context) error {
			return q.IngressReleaseLease(ctx, queries.IngressReleaseLeaseParams{ClusterID: id, JobID: job.ID})
		})
	if err != nil {
		return err
	}
	defer release()

	row, err := q.IngressGet(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load managed ingress of cluster %d: %w", id, err)
	}
	// Done at this generation: another job finished it, or it failed in a
	// way only the user's Retry starts again.
	if row.ObservedGeneration == row.Generation {
		return nil
	}
	c, err := q.ClusterGetByID(ctx, id)
	if err != nil {
		return fmt.Errorf("load cluster %d: %w", id, err)
	}
	// The control plane is not there yet, is being changed, or is going
	// away with everything in it. The cluster's reconcile queues this job
	// again when the cluster becomes ready.
	if c.Status != clusters.StatusReady || c.DeleteRequestedAt.Valid {
		return nil
	}
	logger := w.Logger.With("cluster_id", c.ID, "slug", c.Slug, "generation", row.Generation, "attempt", job.Attempt)
	r := ingressRun{w: w, q: q, row: row, logger: logger}
	cfg, err := w.VirtualConfig(ctx, c)
	if err != nil {
		return r.fail(ctx, fmt.Errorf("reach the control plane: %w", err))
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return r.fail(ctx, fmt.Errorf("virtual cluster client: %w", err))
	}
	st, err := ingress.LoadSettings(ctx, q)
	if err != nil {
		return err
	}
	if row.Enabled {
		owner, err := q.UserGetByID(ctx, c.OwnerID)
		if err != nil {
			return fmt.Errorf("load owner of cluster %d: %w", c.ID, err)
		}
		return r.install(ctx, cfg, client, st, owner.Email)
	}
	return r.remove(ctx, cfg, st)
}

// ingressRun is one job's work on one cluster's managed ingress.
type ingressRun struct {
	w      *IngressReconcileWorker
	q      *queries.Queries
	row    queries.ClusterIngress
	logger *slog.Logger
}

func (r ingressRun) install(ctx context.Context, cfg *rest.Config, client kubernetes.Interface, st ingress.Settings, email string) error {
	src, path := st.Chart()
	ch, err := r.w.Charts.Load(path, src.Repo, src.Name, src.Version)
	if err != nil {
		return r.fail(ctx, err)
	}
	marked, err := ingress.NodesMarked(ctx, client)
	if err != nil {
		return r.fail(ctx, err)
	}
	values, err := ingress.Values(st.Controller, marked)
	if err != nil {
		return r.fail(ctx, err)
	}
	outcome, err := ingress.Install(ctx, cfg, ch, values, r.logger)
	if errors.Is(err, ingress.ErrNamespaceTerminating) {
		return r.waitForRemoval(ctx, st.Controller, ch)
	}
	if err != nil {
		return r.fail(ctx, err)
	}
	if outcome != helm.Unchanged {
		r.logger.Info("ingress controller applied", "outcome", outcome, "controller", st.Controller, "chart_version", ch.Metadata.Version)
		if err := r.event(ctx, "info", "IngressInstalling", st.Controller+" "+ch.Metadata.Version); err != nil {
			return err
		}
	}
	cm := ingress.CertManagerChart
	cmCh, err := r.w.Charts.Load(st.CertManagerChartPath, cm.Repo, cm.Name, cm.Version)
	if err != nil {
		return r.fail(ctx, err)
	}
	cmOutcome, err := ingress.InstallCertManager(ctx, cfg, cmCh, r.logger)
	if errors.Is(err, ingress.ErrNamespaceTerminating) {
		return r.waitForRemoval(ctx, st.Controller, ch)
	}
	if err != nil {
		return r.fail(ctx, err)
	}
	if cmOutcome != helm.Unchanged {
		r.logger.Info("cert-manager applied", "outcome", cmOutcome, "chart_version", cmCh.Metadata.Version)
	}
	ro, err := ingress.ReadRollout(ctx, client)
	if err != nil {
		return r.fail(ctx, err)
	}
	progress := fmt.Sprintf("%d of %d nodes", ro.Ready, ro.Desired)
	if ro.Done && ro.CertManagerReady {
		// Certificates come from the ACME server the admin names, for the
		// owner's account, through the controller.
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return r.fail(ctx, fmt.Errorf("virtual cluster client: %w", err))
		}
		if err := ingress.EnsureIssuer(ctx, dyn, st.ACMEServer, email, ingress.IngressClass(st.Controller)); err != nil {
			return r.fail(ctx, err)
		}
		if err := r.set(ctx, ingress.StatusReady, progress, st.Controller, ch, true); err != nil {
			return err
		}
		// Its routes through the platform edge lead to the controller now.
		if err := ingress.ScheduleEdge(ctx, r.q, r.row.ClusterID); err != nil {
			return err
		}
		r.logger.Info("ingress controller ready", "nodes", ro.Desired)
		if err := r.event(ctx, "info", "IngressReady", progress); err != nil {
			return err
		}
		if r.row.ReadyAt.Valid {
			return nil // ready again after a change of its nodes: told once
		}
		return r.tell(ctx, notify.EmailIngressReady, map[string]any{})
	}
	msg := progress + " ready"
	if !ro.CertManagerReady {
		msg += "; cert-manager starting"
	}
	if len(ro.Problems) > 0 {
		msg += "; " + strings.Join(ro.Problems, "; ")
	}
	if time.Since(r.row.StartedAt.Time) > cmp.Or(r.w.RolloutTimeout, DefaultIngressRolloutTimeout) {
		msg = fmt.Sprintf("the controller did not run on every node within %s: %s", cmp.Or(r.w.RolloutTimeout, DefaultIngressRolloutTimeout), msg)
		if err := r.set(ctx, ingress.StatusError, msg, st.Controller, ch, true); err != nil {
			return err
		}
		r.logger.Warn("ingress rollout failed", "message", msg)
		if err := r.event(ctx, "error", "IngressFailed", msg); err != nil {
			return err
		}
		return r.tell(ctx, notify.EmailIngressFailed, map[string]any{"Reason": msg})
	}
	if err := r.set(ctx, ingress.StatusInstalling, msg, st.Controller, ch, false); err != nil {
		return err
	}
	return river.JobSnooze(r.pollInterval())
}

func (r ingressRun) remove(ctx context.Context, cfg *rest.Config, st ingress.Settings) error {
	if r.row.Status != ingress.StatusRemoving {
		if err := r.set(ctx, ingress.StatusRemoving, "", "", nil, false); err != nil {
			return err
		}
	}
	// The chart the settings name, for the CRDs of a release that is gone
	// already; none if it cannot be had (the release's own chart serves
	// otherwise).
	src, path := st.Chart()
	fallback, err := r.w.Charts.Load(path, src.Repo, src.Name, src.Version)
	if err != nil {
		fallback = nil
	}
	removed, err := ingress.Remove(ctx, cfg, fallback, r.logger)
	if err != nil {
		return r.fail(ctx, err)
	}
	cmRemoved, err := ingress.RemoveCertManager(ctx, cfg, r.logger)
	if err != nil {
		return r.fail(ctx, err)
	}
	removed = removed || cmRemoved
	if err := r.set(ctx, ingress.StatusOff, "", "", nil, true); err != nil {
		return err
	}
	if removed {
		r.logger.Info("ingress controller removed")
	}
	return r.event(ctx, "info", "IngressRemoved", "")
}

// waitForRemoval snoozes while a namespace of the last removal is still
// going away: the install cannot begin before.
func (r ingressRun) waitForRemoval(ctx context.Context, controller string, ch *chart.Chart) error {
	if err := r.set(ctx, ingress.StatusInstalling, "waiting for the last removal to finish", controller, ch, false); err != nil {
		return err
	}
	return river.JobSnooze(r.pollInterval())
}

// fail records an error the console shows, then returns it so that River
// retries with backoff: a control plane that comes back lets a later
// attempt finish. The user's Retry starts again at once.
func (r ingressRun) fail(ctx context.Context, cause error) error {
	msg := cause.Error()
	if err := r.set(ctx, ingress.StatusError, msg, "", nil, false); err != nil {
		return fmt.Errorf("%w (after: %v)", err, cause)
	}
	if err := r.event(ctx, "error", "IngressFailed", msg); err != nil {
		return fmt.Errorf("%w (after: %v)", err, cause)
	}
	if r.row.Status != ingress.StatusError && r.row.Enabled {
		// Once per failure: River's retries find it failed already.
		if err := r.tell(ctx, notify.EmailIngressFailed, map[string]any{"Reason": msg}); err != nil {
			return fmt.Errorf("%w (after: %v)", err, cause)
		}
	}
	return fmt.Errorf("managed ingress of cluster %d: %w", r.row.ClusterID, cause)
}

// set writes where this generation stands; ch names the chart installed.
func (r ingressRun) set(ctx context.Context, status, msg, controller string, ch *chart.Chart, done bool) error {
	version := ""
	if ch != nil {
		version = ch.Metadata.Version
	}
	_, err := r.q.IngressSetStatus(ctx, queries.IngressSetStatusParams{
		ClusterID: r.row.ClusterID, Generation: r.row.Generation, Status: status, Message: input.Truncate(msg, 2000),
		Controller: controller, ChartVersion: version, Done: done,
	})
	if err != nil {
		return fmt.Errorf("record managed ingress status: %w", err)
	}
	return nil
}

func (r ingressRun) event(ctx context.Context, level, reason, msg string) error {
	return clusters.Event(ctx, r.q, r.row.ClusterID, level, reason, input.Truncate(msg, 2000))
}

func (r ingressRun) pollInterval() time.Duration {
	return cmp.Or(r.w.PollInterval, 5*time.Second)
}

// tell tells the cluster's organization about its managed ingress (kind
// notify.Ingress, notify.TellCluster).
func (r ingressRun) tell(ctx context.Context, template string, data map[string]any) error {
	return pgx.BeginFunc(ctx, r.w.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		c, err := q.ClusterGetByID(ctx, r.row.ClusterID)
		if err != nil {
			return fmt.Errorf("load cluster %d: %w", r.row.ClusterID, err)
		}
		_, err = notify.Notices{Box: r.w.Box}.TellCluster(ctx, tx, c, notify.Ingress, template, data)
		return err
	})
}
