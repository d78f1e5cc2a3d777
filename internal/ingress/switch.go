package ingress

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/entitlements"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// Where a cluster's managed ingress stands (cluster_ingress.status).
const (
	StatusOff        = "off"
	StatusInstalling = "installing"
	StatusReady      = "ready"
	StatusRemoving   = "removing"
	StatusError      = "error"
)

// Errors users see (catalog message IDs).
var (
	ErrNoAppsDomain = errors.New("ErrIngressNoAppsDomain")
	ErrNotFailed    = errors.New("ErrIngressNotFailed")
)

// ReconcileArgs asks for a cluster's managed ingress to be driven toward
// its switch (worked by jobs.IngressReconcileWorker). Every switch and
// retry enqueues one; like clusters.ReconcileArgs they are not unique,
// and the worker serialises the jobs of one cluster with a lease.
type ReconcileArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (ReconcileArgs) Kind() string { return "ingress_reconcile" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (ReconcileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: clusters.Queue, MaxAttempts: 10}
}

// Service switches a cluster's managed ingress.
type Service struct {
	Pool  *pgxpool.Pool
	River *river.Client[pgx.Tx]
	// DNS writes the CNAME target's records (SyncDNS) and the host names'
	// CNAMEs (CheckHostnames).
	DNS *dnsrecords.Service
	// Virtual reaches a ready cluster's control plane, for its
	// certificates (CheckHostnames); nil leaves them alone.
	Virtual clusters.VirtualConfigFunc
	// Box opens the runtime settings (the API base domain a host name
	// must not be under; the host cluster).
	Box *secrets.Box
	// KubeconfigPath names the host cluster where the admin settings do
	// not (KUBEBYON_KUBECONFIG), for the platform edge's objects.
	KubeconfigPath string
	// PlatformHost is the host of the platform's base URL, which no
	// cluster may take for a host name.
	PlatformHost string
}

// State is a cluster's managed ingress as the pages and the API show it.
type State struct {
	Enabled bool
	// Status is one of the Status constants; StatusOff when never on.
	Status  string
	Message string
	// Controller and ChartVersion are what was installed last.
	Controller   string
	ChartVersion string
	// CNAMETarget is the name host names point at; empty without an apps
	// base domain.
	CNAMETarget string
	// DNSState is how its records stand (the DNS constants; "" before
	// the first check), DNSAddresses what they hold (or, unmanaged,
	// should hold), DNSError why they could not be written.
	DNSState     string
	DNSAddresses []string
	DNSError     string
	// Mode is how it is reached (ModeDirect or ModeEdge). EdgeBlocker
	// says why the platform edge cannot be chosen (ErrEdgeNotConfigured,
	// ErrPodCIDRShared), nil when it can; PodCIDR is the cluster's Pod
	// network.
	Mode        string
	EdgeBlocker error
	PodCIDR     string
	// EdgeState is where its routes through the edge stand (the Edge
	// constants; "" when it does not go through the edge), EdgeMessage
	// why not routed, EdgePods the controller pods they lead to.
	EdgeState, EdgeMessage string
	EdgePods               []string
}

// Busy reports whether a job is at work on it: the pages keep watching.
func (s State) Busy() bool { return Busy(s.Status) }

// Busy reports whether a job is at work on a managed ingress in status.
func Busy(status string) bool { return status == StatusInstalling || status == StatusRemoving }

// Status is where the cluster's managed ingress stands (StatusOff when
// never on).
func (s *Service) Status(ctx context.Context, clusterID int64) (string, error) {
	status, err := queries.New(s.Pool).IngressStatus(ctx, clusterID)
	if err != nil {
		return "", fmt.Errorf("load managed ingress status: %w", err)
	}
	return status, nil
}

// Get returns the cluster's managed ingress (the caller has read c as its
// owner's).
func (s *Service) Get(ctx context.Context, c queries.Cluster) (State, error) {
	q := queries.New(s.Pool)
	st, err := LoadSettings(ctx, q)
	if err != nil {
		return State{}, err
	}
	blocker, err := edgeOffer(ctx, q, st, c)
	if err != nil {
		return State{}, err
	}
	row, err := q.IngressGet(ctx, c.ID)
	var out State
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		out = State{Status: StatusOff, CNAMETarget: st.CNAMETarget(c.Slug), Mode: ModeDirect}
	case err != nil:
		return State{}, fmt.Errorf("load managed ingress: %w", err)
	default:
		out = stateOf(row, st, c.Slug)
	}
	out.EdgeBlocker, out.PodCIDR = blocker, c.PodCidr.String()
	return out, nil
}

func stateOf(row queries.ClusterIngress, st Settings, slug string) State {
	return State{
		Enabled: row.Enabled, Status: row.Status, Message: row.Message,
		Controller: row.Controller, ChartVersion: row.ChartVersion, CNAMETarget: st.CNAMETarget(slug),
		DNSState: row.DnsState, DNSAddresses: row.DnsAddresses, DNSError: row.DnsError,
		Mode: row.Mode, EdgeState: row.EdgeState, EdgeMessage: row.EdgeMessage, EdgePods: row.EdgePods,
	}
}

// Switch turns the cluster's managed ingress on or off: the row, a
// cluster event, the audit event and the reconcile job, in one
// transaction. Switching to where it points already changes nothing.
func (s *Service) Switch(ctx context.Context, c queries.Cluster, on bool, actor audit.Actor) (State, error) {
	return s.change(ctx, c, func(tx pgx.Tx) error { return s.SwitchTx(ctx, tx, c, on, actor) })
}

// change runs fn in a transaction of its own, then reads the cluster's
// managed ingress as it left it.
func (s *Service) change(ctx context.Context, c queries.Cluster, fn func(pgx.Tx) error) (State, error) {
	if err := pgx.BeginFunc(ctx, s.Pool, fn); err != nil {
		return State{}, err
	}
	return s.Get(ctx, c)
}

// SwitchTx is Switch in the caller's transaction (a clusters.Edit step),
// under the cluster's lock for a change (lockForChange).
func (s *Service) SwitchTx(ctx context.Context, tx pgx.Tx, c queries.Cluster, on bool, actor audit.Actor) error {
	q := queries.New(tx)
	st, err := lockForChange(ctx, q, c)
	if err != nil {
		return err
	}
	if on && st.AppsBaseDomain == "" {
		return ErrNoAppsDomain
	}
	cur, err := q.IngressGet(ctx, c.ID)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("load managed ingress: %w", err)
	}
	never := errors.Is(err, pgx.ErrNoRows)
	if on {
		ent, err := entitlements.For(ctx, q, c.OrgID)
		if err != nil {
			return err
		}
		// Switching on what is on already stays allowed: the plan
		// refuses new things, and takes nothing away.
		if err := ent.Ingress(); err != nil && (never || !cur.Enabled) {
			return err
		}
	}
	if !on && never {
		// Off, never on: nothing to write.
		return nil
	}
	if _, err := q.IngressSwitch(ctx, queries.IngressSwitchParams{ClusterID: c.ID, Enabled: on}); errors.Is(err, pgx.ErrNoRows) {
		// Pointing that way already, or the cluster is going away.
		if !never && cur.Enabled == on {
			return nil
		}
		return clusters.ErrDeleting
	} else if err != nil {
		return fmt.Errorf("switch managed ingress: %w", err)
	}
	reason := "IngressEnabled"
	if !on {
		reason = "IngressDisabled"
	}
	if err := s.recordAndQueue(ctx, tx, c, actor, reason, "", "cluster.managed_ingress", map[string]any{"enabled": on}); err != nil {
		return err
	}
	// Its CNAME target is published, or removed; so are its routes
	// through the edge.
	if err := ScheduleEdge(ctx, q, c.ID); err != nil {
		return err
	}
	return checks.Schedule(ctx, q, c.ID, checks.IngressDNS, time.Now())
}

// lockForChange takes the cluster's lock for a change of what its entity
// tag is made of (clusters.Edit), and reads the settings under it: a
// switch or a mode queues behind the API's conditional change, and the
// other way round. The cluster first, then the managed ingress's row, as
// Edit takes them. A deleted cluster is ErrDeleting.
func lockForChange(ctx context.Context, q *queries.Queries, c queries.Cluster) (Settings, error) {
	_, err := q.ClusterLockLiveForChange(ctx, c.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Settings{}, clusters.ErrDeleting
	}
	if err != nil {
		return Settings{}, fmt.Errorf("lock cluster %d: %w", c.ID, err)
	}
	return LoadSettings(ctx, q)
}

// Retry starts the install or removal that failed again.
func (s *Service) Retry(ctx context.Context, c queries.Cluster, actor audit.Actor) (State, error) {
	st, err := LoadSettings(ctx, queries.New(s.Pool))
	if err != nil {
		return State{}, err
	}
	var out State
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		row, err := q.IngressRetry(ctx, c.ID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFailed
		}
		if err != nil {
			return fmt.Errorf("retry managed ingress: %w", err)
		}
		out = stateOf(row, st, c.Slug)
		return s.recordAndQueue(ctx, tx, c, actor, "IngressRetried", "", "cluster.managed_ingress_retry", map[string]any{})
	})
	return out, err
}

// recordAndQueue writes a change of the cluster's managed ingress in tx:
// the cluster event reason (and message), the audit event action (details and the
// cluster's name), and the reconcile job that carries it out.
func (s *Service) recordAndQueue(ctx context.Context, tx pgx.Tx, c queries.Cluster, actor audit.Actor, reason, msg, action string, details map[string]any) error {
	q := queries.New(tx)
	if _, err := q.ClusterEventCreate(ctx, queries.ClusterEventCreateParams{ClusterID: c.ID, Level: "info", Reason: reason, Message: msg}); err != nil {
		return fmt.Errorf("record event: %w", err)
	}
	details["cluster"] = c.Name
	if err := audit.Record(ctx, q, actor, audit.Event{Action: action, TargetType: "cluster", TargetID: fmt.Sprint(c.ID), Details: details}); err != nil {
		return err
	}
	if _, err := s.River.InsertTx(ctx, tx, ReconcileArgs{ClusterID: c.ID}, nil); err != nil {
		return fmt.Errorf("queue managed ingress reconcile: %w", err)
	}
	return nil
}

// Refresh asks for the controller to be applied again, in the caller's
// transaction, when managed ingress is on: the nodes it runs on changed
// from every node to the marked ones, or back.
func Refresh(ctx context.Context, tx pgx.Tx, rc *river.Client[pgx.Tx], clusterID int64) error {
	n, err := queries.New(tx).IngressRefresh(ctx, clusterID)
	if err != nil {
		return fmt.Errorf("refresh managed ingress of cluster %d: %w", clusterID, err)
	}
	if n == 0 {
		return nil
	}
	if _, err := rc.InsertTx(ctx, tx, ReconcileArgs{ClusterID: clusterID}, nil); err != nil {
		return fmt.Errorf("queue managed ingress reconcile: %w", err)
	}
	return nil
}
