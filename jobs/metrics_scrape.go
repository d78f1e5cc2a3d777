package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// MetricsScrapeWorker scrapes one ready cluster's control plane
// (checks.MetricsScrape): its /metrics, and its nodes and pods from the
// API; the rates are the difference from the last scrape's counters. A
// control plane that does not answer records a gap and backs off.
type MetricsScrapeWorker struct {
	river.WorkerDefaults[metrics.ScrapeArgs]
	Metrics       *metrics.Service
	Logger        *slog.Logger
	VirtualConfig clusters.VirtualConfigFunc
	// Box seals the alert emails' data.
	Box *secrets.Box
	// Transitions logs the clusters going unreachable and back.
	Transitions *checks.Transitions
}

// Timeout implements river.Worker: three calls of checks.CallTimeout.
func (w *MetricsScrapeWorker) Timeout(*river.Job[metrics.ScrapeArgs]) time.Duration {
	return 30 * time.Second
}

// Work implements river.Worker.
func (w *MetricsScrapeWorker) Work(ctx context.Context, job *river.Job[metrics.ScrapeArgs]) error {
	q := queries.New(w.Metrics.Pool)
	c, err := q.ClusterGetByID(ctx, job.Args.ClusterID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load cluster %d: %w", job.Args.ClusterID, err)
	}
	rec := checks.Recorder{Q: q, Log: w.Transitions}
	st, err := metrics.LoadSettings(ctx, q)
	if err != nil {
		return err
	}
	// A cluster that is not ready is not scraped: its check goes idle
	// until the cluster is ready again (metrics.ScheduleScrape, on ready).
	if c.Status != clusters.StatusReady || c.DeleteRequestedAt.Valid {
		return rec.Done(ctx, c.ID, checks.MetricsScrape, st.Interval(), time.Time{}, nil)
	}
	at := time.Now()
	smp, err := w.scrape(ctx, c, at)
	if err == nil {
		err = w.alert(ctx, c, st, smp)
	}
	if err != nil {
		var unreachable *checks.UnreachableError
		if errors.As(err, &unreachable) {
			// A gap, not zeros: the chart shows the control plane did not
			// answer.
			if gapErr := w.Metrics.Record(ctx, c.ID, metrics.Sample{At: at}); gapErr != nil {
				return gapErr
			}
		}
	}
	return rec.Done(ctx, c.ID, checks.MetricsScrape, st.Interval(), at.Add(st.Interval()), err)
}

// scrape reads the control plane and records the interval's sample (which
// it returns) and the counters the next one starts from; errors reaching
// the control plane are checks.UnreachableError.
func (w *MetricsScrapeWorker) scrape(ctx context.Context, c queries.Cluster, at time.Time) (metrics.Sample, error) {
	cfg, err := w.VirtualConfig(ctx, c)
	if err != nil {
		return metrics.Sample{}, checks.Unreachable(fmt.Errorf("reach cluster %d: %w", c.ID, err))
	}
	cfg = checks.Bounded(cfg)
	// One connection for the scrape and the lists, closed when done:
	// client-go does not keep a cluster's transport between scrapes, and
	// an idle connection per cluster held until it timed out cost about
	// half a megabyte each (BenchmarkMetricsSteadyState).
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return metrics.Sample{}, fmt.Errorf("client of cluster %d: %w", c.ID, err)
	}
	defer hc.CloseIdleConnections()
	cur, err := metrics.Scrape(ctx, cfg, hc)
	if err != nil {
		return metrics.Sample{}, checks.Unreachable(fmt.Errorf("scrape cluster %d: %w", c.ID, err))
	}
	// The node and pod lists in protobuf: several times cheaper to decode
	// than JSON.
	listCfg := rest.CopyConfig(cfg)
	listCfg.ContentType = "application/vnd.kubernetes.protobuf"
	kc, err := kubernetes.NewForConfigAndClient(listCfg, hc)
	if err != nil {
		return metrics.Sample{}, fmt.Errorf("client of cluster %d: %w", c.ID, err)
	}
	nodesReady, nodesTotal, podsRunning, podsTotal, err := metrics.CountNodesPods(ctx, kc)
	if err != nil {
		return metrics.Sample{}, checks.Unreachable(fmt.Errorf("count nodes and pods of cluster %d: %w", c.ID, err))
	}
	prevJSON, prevAt, ok, err := w.Metrics.LastCounters(ctx, c.ID)
	if err != nil {
		return metrics.Sample{}, err
	}
	var prev *metrics.Counters
	if ok {
		var p metrics.Counters
		if err := json.Unmarshal(prevJSON, &p); err != nil {
			// Counters of an older release: start over from this scrape.
			w.Logger.WarnContext(ctx, "metrics counters unreadable; rates start again", "cluster_id", c.ID, "error", err)
		} else {
			prev = &p
		}
	}
	smp := metrics.Derive(prev, prevAt, cur, at)
	smp.NodesReady, smp.NodesTotal, smp.PodsRunning, smp.PodsTotal = &nodesReady, &nodesTotal, &podsRunning, &podsTotal
	if err := w.Metrics.Record(ctx, c.ID, smp); err != nil {
		return metrics.Sample{}, err
	}
	b, err := json.Marshal(cur)
	if err != nil {
		return metrics.Sample{}, fmt.Errorf("encode counters of cluster %d: %w", c.ID, err)
	}
	return smp, w.Metrics.KeepCounters(ctx, c.ID, b, at)
}

// alert raises and clears the cluster's control-plane alerts
// (metrics.Service.Evaluate) and tells its organization (notify.TellCluster),
// in one transaction: told once per alert.
func (w *MetricsScrapeWorker) alert(ctx context.Context, c queries.Cluster, st metrics.Settings, smp metrics.Sample) error {
	return pgx.BeginFunc(ctx, w.Metrics.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		raised, cleared, err := w.Metrics.Evaluate(ctx, q, c.ID, st, smp)
		if err != nil || len(raised)+len(cleared) == 0 {
			return err
		}
		for _, a := range raised {
			template, data := alertMessage(c, st, a.Kind, false)
			id, err := notify.Notices{Box: w.Box}.TellCluster(ctx, tx, c, notify.ControlPlane, template, data)
			if err != nil {
				return err
			}
			if err := metrics.SetAlertNotification(ctx, q, c.ID, a.Kind, id); err != nil {
				return err
			}
			w.Logger.InfoContext(ctx, "control-plane alert", "cluster_id", c.ID, "alert", a.Kind)
		}
		for _, a := range cleared {
			// The alert is dealt with: its notifications are read.
			if a.NotificationID != 0 {
				if err := q.NotificationMarkReadEvent(ctx, queries.NotificationMarkReadEventParams{ID: a.NotificationID, OrgID: c.OrgID}); err != nil {
					return fmt.Errorf("clear %s alert of cluster %d: %w", a.Kind, c.ID, err)
				}
			}
			template, data := alertMessage(c, st, a.Kind, true)
			if _, err := (notify.Notices{Box: w.Box}).TellCluster(ctx, tx, c, notify.ControlPlane, template, data); err != nil {
				return err
			}
			w.Logger.InfoContext(ctx, "control-plane alert cleared", "cluster_id", c.ID, "alert", a.Kind)
		}
		return nil
	})
}

// alertMessage is the template and data of an alert's notice.
func alertMessage(c queries.Cluster, st metrics.Settings, kind metrics.AlertKind, cleared bool) (string, map[string]any) {
	data := map[string]any{"Cluster": c.Name, "ClusterID": c.ID, "Minutes": int(metrics.AlertFor.Minutes())}
	if kind == metrics.AlertErrors {
		data["Threshold"] = strconv.FormatFloat(st.AlertErrorRate, 'f', -1, 64)
		if cleared {
			return notify.EmailControlPlaneErrorsCleared, data
		}
		return notify.EmailControlPlaneErrors, data
	}
	data["Threshold"] = strconv.Itoa(st.AlertLatencyP99Ms)
	if cleared {
		return notify.EmailControlPlaneSlowCleared, data
	}
	return notify.EmailControlPlaneSlow, data
}
