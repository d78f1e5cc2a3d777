// Package jobs holds the River job kinds, their workers, and the River client
// that runs them. Workers are idempotent: a job killed halfway is finished by
// the next attempt.
package jobs

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/kubebyon/kubebyon/internal/adminjobs"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/helm"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/mail"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/opswatch"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/internal/webhooks"
)

// Deps are what the workers need.
type Deps struct {
	Pool    *pgxpool.Pool
	Logger  *slog.Logger
	Metrics prometheus.Registerer
	Box     *secrets.Box
	Catalog *locale.Catalog
	BaseURL string
	// Charts caches the vcluster chart; KubeconfigPath is KUBEBYON_KUBECONFIG.
	Charts         *vcluster.Charts
	KubeconfigPath string
	// WebhookCABundle is the PEM the virtual apiservers verify the
	// platform's certificate with when they call the node quota webhook
	// (KUBEBYON_WEBHOOK_CA_FILE); empty means their system roots.
	WebhookCABundle []byte

	// The domain services the workers call, built once on Pool
	// (services.New), as the handlers' are on theirs.
	//
	// VirtualConfig reaches a ready cluster's control plane
	// (clusters.Service.VirtualConfig).
	VirtualConfig clusters.VirtualConfigFunc
	JoinTokens    *jointokens.Service
	Billing       *billing.Service
	Webhooks      *webhooks.Service
	// ClusterMetrics keeps the control planes' metrics (Metrics above is
	// the platform's own registry).
	ClusterMetrics *metrics.Service
	DNS            *dnsrecords.Service
	Ingress        *ingress.Service
	// Mailer sends the platform's mail (services.Set.Mail).
	Mailer mail.Sender
}

// Options shape the client.
type Options struct {
	// ID is the River client ID; empty lets River make one. A worker
	// process passes the ID of its workerprocs row, which River's leader
	// row then names.
	ID string
	// Work makes the client fetch and work jobs; without it the client only
	// inserts (an API replica in multi-node mode).
	Work bool
	// WorkQueues limits the queues worked to these; empty works them all.
	WorkQueues []string
	// SkipPeriodic works the queues without inserting the periodic jobs
	// (tests that queue the ones they run).
	SkipPeriodic bool
	// MaxWorkers for the default queue.
	MaxWorkers int
	// CleanupInterval is how often expired rows are deleted.
	CleanupInterval time.Duration
	// ClusterPollInterval is how often a provisioning cluster is checked;
	// ClusterReadyTimeout how long it may take before it is marked failed.
	ClusterPollInterval time.Duration
	ClusterReadyTimeout time.Duration
	// IngressRolloutTimeout is how long a managed ingress controller may
	// take to run on its nodes before the install is marked failed (zero:
	// DefaultIngressRolloutTimeout).
	IngressRolloutTimeout time.Duration
	// ChecksInterval is how often the due per-cluster checks are queued
	// (package checks); zero queues none (tests that work the checks
	// themselves). CheckWorkers bounds how many run at once: most of a
	// check's time is spent waiting on a control plane, which may hang
	// for checks.CallTimeout.
	ChecksInterval time.Duration
	CheckWorkers   int
	// NodeHealthInterval is how often the nodes of a ready cluster that
	// answers are snapshotted; a node NotReady for longer than
	// NodeNotReadyAfter is reported to the cluster's owner.
	NodeHealthInterval time.Duration
	NodeNotReadyAfter  time.Duration
	// CompletedJobRetention is how long River keeps completed jobs; short,
	// as the checks complete thousands an hour (zero: River's default).
	CompletedJobRetention time.Duration
	// ClusterStepTimeout bounds one attempt of a cluster reconcile, and
	// JobTimeout the attempts of kinds with no timeout of their own.
	ClusterStepTimeout time.Duration
	JobTimeout         time.Duration
	// RescueStuckJobsAfter is how long a job may stay running before
	// River's rescuer takes it for dead (its worker was killed or its
	// machine lost) and runs it again; the rescuer also waits for the
	// job's own timeout. Zero means DefaultRescueStuckJobsAfter.
	RescueStuckJobsAfter time.Duration
}

// DefaultRescueStuckJobsAfter is RescueStuckJobsAfter of the default
// cluster step. River's default, an hour, left a cluster whose worker died
// pending for that long.
const DefaultRescueStuckJobsAfter = DefaultClusterStepTimeout + rescueGrace

// rescueGrace is the time a live worker has to wrap up after its
// attempt's context ended, before its job is taken for dead.
const rescueGrace = 30 * time.Second

// RescueStuckJobsAfter is when River's rescuer takes a running job for
// dead (its worker was killed or its machine lost) and runs it again: the
// longest fixed step of any job kind (a cluster reconcile's, whose node
// health runs are shorter) and a grace. A drain runs as long as its own
// timeout says, which the rescuer waits for too.
func RescueStuckJobsAfter(clusterStep time.Duration) time.Duration {
	return clusterStep + rescueGrace
}

// DefaultOptions are the production settings.
func DefaultOptions(work bool) Options {
	return Options{
		Work: work, MaxWorkers: 20, CleanupInterval: 15 * time.Minute,
		ClusterPollInterval: 5 * time.Second, ClusterReadyTimeout: 10 * time.Minute,
		ChecksInterval: 5 * time.Second, CheckWorkers: 250,
		NodeHealthInterval: nodes.HealthInterval, NodeNotReadyAfter: 5 * time.Minute,
		CompletedJobRetention: 10 * time.Minute,
		ClusterStepTimeout:    DefaultClusterStepTimeout, JobTimeout: river.JobTimeoutDefault,
		RescueStuckJobsAfter: DefaultRescueStuckJobsAfter,
	}
}

// transitionsLoggedPerMinute is how many clusters going unreachable or
// back are logged one by one a minute; the rest are counted.
const transitionsLoggedPerMinute = 60

// Workers registers every worker.
func Workers(d Deps, opts Options) *river.Workers {
	w := river.NewWorkers()
	virtual := d.VirtualConfig
	river.AddWorker(w, &CleanupWorker{Pool: d.Pool, Logger: d.Logger})
	river.AddWorker(w, &BillingPeriodsWorker{Billing: d.Billing, Logger: d.Logger.With("component", "billing")})
	river.AddWorker(w, &EmailWorker{Pool: d.Pool, Sender: d.Mailer, Box: d.Box, Catalog: d.Catalog, BaseURL: d.BaseURL})
	river.AddWorker(w, &WebhookWorker{Webhooks: d.Webhooks})
	charts := d.Charts
	if charts == nil {
		charts = &vcluster.Charts{}
	}
	river.AddWorker(w, &ClusterReconcileWorker{
		Pool: d.Pool, Logger: d.Logger.With("component", "cluster_reconcile"), Box: d.Box, Charts: charts,
		KubeconfigPath: d.KubeconfigPath, PollInterval: opts.ClusterPollInterval, ReadyTimeout: opts.ClusterReadyTimeout,
		StepTimeout: opts.ClusterStepTimeout,
	})
	river.AddWorker(w, &IngressReconcileWorker{
		Pool: d.Pool, Logger: d.Logger.With("component", "ingress_reconcile"), VirtualConfig: virtual,
		Charts: &helm.Charts{}, Box: d.Box, PollInterval: opts.ClusterPollInterval, RolloutTimeout: opts.IngressRolloutTimeout,
	})
	river.AddWorker(w, &ClusterAccessRevokeWorker{Pool: d.Pool, VirtualConfig: virtual})
	river.AddWorker(w, &NodeOperationWorker{Pool: d.Pool, Logger: d.Logger.With("component", "node_drain"), VirtualConfig: virtual})
	// One per process: it bounds the lines about clusters going
	// unreachable and back.
	transitions := checks.NewTransitions(d.Logger.With("component", "checks"), checks.NodeHealth, transitionsLoggedPerMinute)
	river.AddWorker(w, &NodeHealthWorker{
		Pool: d.Pool, Logger: d.Logger.With("component", "node_health"), Box: d.Box,
		VirtualConfig: virtual, Threshold: opts.NodeNotReadyAfter, Interval: opts.NodeHealthInterval,
		Transitions: transitions,
	})
	river.AddWorker(w, &JoinTokenSyncWorker{Tokens: d.JoinTokens, Notices: notify.Notices{Box: d.Box}, Transitions: transitions})
	river.AddWorker(w, &NodeQuotaSyncWorker{
		Pool: d.Pool, Logger: d.Logger.With("component", "node_quota_sync"), Box: d.Box,
		VirtualConfig: virtual, BaseURL: d.BaseURL, CABundle: d.WebhookCABundle,
		Transitions: transitions,
	})
	river.AddWorker(w, &NodeQuotaRewriteWorker{Pool: d.Pool, Box: d.Box, Logger: d.Logger.With("component", "node_quota_rewrite")})
	river.AddWorker(w, &ClusterChecksWorker{Pool: d.Pool, Transitions: transitions})
	river.AddWorker(w, &MetricsMaintainWorker{Metrics: d.ClusterMetrics, Logger: d.Logger.With("component", "metrics")})
	river.AddWorker(w, &MetricsScrapeWorker{
		Metrics: d.ClusterMetrics, Logger: d.Logger.With("component", "metrics_scrape"),
		VirtualConfig: virtual, Box: d.Box, Transitions: transitions,
	})
	river.AddWorker(w, &DNSRecordWorker{DNS: d.DNS, Transitions: transitions})
	river.AddWorker(w, &IngressDNSWorker{Ingress: d.Ingress, Transitions: transitions})
	river.AddWorker(w, &IngressEdgeWorker{Ingress: d.Ingress, Transitions: transitions})
	river.AddWorker(w, &IngressHostnamesWorker{Ingress: d.Ingress, Transitions: transitions})
	river.AddWorker(w, &EdgeWatchWorker{Pool: d.Pool, Box: d.Box, Logger: d.Logger.With("component", "edge_watch"), Notices: notify.Notices{Box: d.Box}})
	river.AddWorker(w, &OpsWatchWorker{Pool: d.Pool, Box: d.Box, Logger: d.Logger.With("component", "ops_watch"), Notices: notify.Notices{Box: d.Box}, KubeconfigPath: d.KubeconfigPath})
	river.AddWorker(w, &HostNodesWorker{Pool: d.Pool, Box: d.Box, KubeconfigPath: d.KubeconfigPath, Logger: d.Logger.With("component", "edge_host_nodes")})
	return w
}

// queues are the queues a working client works under opts.
func queues(opts Options) map[string]river.QueueConfig {
	qs := map[string]river.QueueConfig{
		river.QueueDefault:  {MaxWorkers: opts.MaxWorkers},
		notify.QueueEmail:   {MaxWorkers: 5},
		clusters.Queue:      {MaxWorkers: opts.MaxWorkers},
		checks.Queue:        {MaxWorkers: cmp.Or(opts.CheckWorkers, opts.MaxWorkers)},
		notify.QueueWebhook: {MaxWorkers: 10},
	}
	if len(opts.WorkQueues) > 0 {
		for name := range qs {
			if !slices.Contains(opts.WorkQueues, name) {
				delete(qs, name)
			}
		}
	}
	return qs
}

// WorkedQueues are the names of the queues a working client works under
// opts, sorted (what a worker process tells of itself, workerprocs).
func WorkedQueues(opts Options) []string {
	return slices.Sorted(maps.Keys(queues(opts)))
}

// NewClient builds the River client. Start it only when opts.Work is set.
func NewClient(d Deps, opts Options) (*river.Client[pgx.Tx], error) {
	// A kind without a timeout of its own may not run past the rescue:
	// it would run twice (River refuses such a config).
	rescue := cmp.Or(opts.RescueStuckJobsAfter, DefaultRescueStuckJobsAfter)
	cfg := &river.Config{
		ID:                          opts.ID,
		Logger:                      slog.New(riverLog{d.Logger.Handler()}).With("component", "river"),
		Workers:                     Workers(d, opts),
		JobTimeout:                  min(cmp.Or(opts.JobTimeout, river.JobTimeoutDefault), rescue),
		RescueStuckJobsAfter:        rescue,
		CompletedJobRetentionPeriod: opts.CompletedJobRetention,
	}
	if opts.Work {
		cfg.Queues = queues(opts)
		if !opts.SkipPeriodic {
			for _, p := range periodicJobs(opts) {
				cfg.PeriodicJobs = append(cfg.PeriodicJobs, river.NewPeriodicJob(
					river.PeriodicInterval(p.interval), p.args, &river.PeriodicJobOpts{RunOnStart: p.runOnStart, ID: p.id},
				))
			}
		}
		cfg.Middleware = append(cfg.Middleware, newMetricsMiddleware(d.Metrics))
	}
	client, err := river.NewClient(riverpgxv5.New(d.Pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	return client, nil
}

// periodic is a periodic job: its ID, how often it is inserted, what it
// inserts, and whether the leader inserts it as soon as it is elected.
type periodic struct {
	id         string
	interval   time.Duration
	args       func() (river.JobArgs, *river.InsertOpts)
	runOnStart bool
}

// periodicJobs are the periodic jobs under opts.
func periodicJobs(opts Options) []periodic {
	ps := []periodic{
		{id: "cleanup", interval: opts.CleanupInterval, runOnStart: true,
			args: func() (river.JobArgs, *river.InsertOpts) { return CleanupArgs{}, nil }},
		// When the workers start: a restart with a new base URL or CA
		// bundle rewrites the webhook configurations at once; and the
		// ready clusters without the node quota get it.
		{id: "node_quota_rewrite", interval: 24 * time.Hour, runOnStart: true,
			args: func() (river.JobArgs, *river.InsertOpts) { return nodequota.RewriteArgs{}, nil }},
		// The host nodes NodePort clusters' routes go to.
		{id: "edge_host_nodes", interval: HostNodesInterval, runOnStart: true,
			args: func() (river.JobArgs, *river.InsertOpts) {
				return edge.HostNodesArgs{}, &river.InsertOpts{UniqueOpts: checks.UniqueWhileWaiting()}
			}},
		// Periods that end, grace that runs out, unpaid orders.
		{id: "billing_periods", interval: billing.PeriodsInterval, runOnStart: true,
			args: func() (river.JobArgs, *river.InsertOpts) { return billing.PeriodsArgs{}, nil }},
		// The metrics tables' partitions, rollups and retention.
		{id: "metrics_maintain", interval: MetricsMaintainInterval, runOnStart: true,
			args: func() (river.JobArgs, *river.InsertOpts) { return metrics.MaintainArgs{}, nil }},
		// Edges out of step, told to the admins.
		{id: "edge_watch", interval: EdgeWatchInterval,
			args: func() (river.JobArgs, *river.InsertOpts) {
				return edge.WatchArgs{}, &river.InsertOpts{MaxAttempts: 1, UniqueOpts: checks.UniqueWhileWaiting()}
			}},
		// The platform's own health (failed jobs, the host), told to the
		// admins.
		{id: "ops_watch", interval: opswatch.Interval,
			args: func() (river.JobArgs, *river.InsertOpts) {
				return opswatch.WatchArgs{}, &river.InsertOpts{MaxAttempts: 1, UniqueOpts: checks.UniqueWhileWaiting()}
			}},
	}
	if opts.ChecksInterval > 0 {
		ps = append(ps, periodic{id: "cluster_checks", interval: opts.ChecksInterval, runOnStart: true,
			args: func() (river.JobArgs, *river.InsertOpts) { return checks.DispatchArgs{}, nil }})
	}
	return ps
}

// PeriodicSchedules are the kinds and intervals of the periodic jobs that
// workers run under opts, for the admin's jobs page (which an API replica
// serves: it does not matter whether opts.Work is set).
func PeriodicSchedules(opts Options) []adminjobs.Schedule {
	var ss []adminjobs.Schedule
	for _, p := range periodicJobs(opts) {
		args, _ := p.args()
		ss = append(ss, adminjobs.Schedule{Kind: args.Kind(), Interval: p.interval})
	}
	return ss
}
