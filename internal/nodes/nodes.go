// Package nodes is what cluster owners do with the nodes of their ready
// clusters: list and inspect them in the virtual cluster, cordon and
// uncordon them at once, and drain or delete them through the
// node_operation job. Every action writes an audit event.
package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/drain"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// Errors users see (catalog message IDs).
var (
	ErrNotFound      = errors.New("ErrNodeNotFound")
	ErrUnreachable   = errors.New("ErrNodeClusterUnreachable")
	ErrOperationBusy = errors.New("ErrNodeOperationBusy")
)

// Limits of the drain options.
const (
	MaxGracePeriodSeconds = 3600
	MaxTimeoutSeconds     = 3600
	DefaultTimeoutSeconds = 300
)

// Kinds of node operation.
const (
	OpDrain  = "drain"
	OpDelete = "delete"
)

// Service carries what the node actions need.
type Service struct {
	Pool     *pgxpool.Pool
	River    *river.Client[pgx.Tx]
	Clusters *clusters.Service
}

// Summary is one node in the list.
type Summary struct {
	Name           string
	Status         string // Ready, NotReady or Unknown
	Unschedulable  bool
	Roles          []string
	KubeletVersion string
	OS, Arch       string
	InternalIP     string
	ExternalIP     string
	Created        time.Time
	// LastSeen is when the nodes table last recorded the node (List); zero
	// for a node read live.
	LastSeen time.Time
}

// Detail is one node with everything the node page shows.
type Detail struct {
	Summary
	Conditions  []corev1.NodeCondition
	Capacity    corev1.ResourceList
	Allocatable corev1.ResourceList
	Taints      []corev1.Taint
	Labels      map[string]string
	Pods        []corev1.Pod
	// IngressNode and PublicAddress are what the user set for managed
	// ingress (SetIngress).
	IngressNode   bool
	PublicAddress string
	// Recorded: the control plane did not answer (Cause says how), and
	// this is the node as the nodes table last recorded it (Show).
	Recorded bool
	Cause    error
}

func summarize(n *corev1.Node) Summary {
	status, _ := Readiness(n)
	return Summary{
		Name: n.Name, Status: status, Unschedulable: n.Spec.Unschedulable, Roles: Roles(n),
		KubeletVersion: n.Status.NodeInfo.KubeletVersion, OS: n.Status.NodeInfo.OperatingSystem, Arch: n.Status.NodeInfo.Architecture,
		InternalIP: Address(n, corev1.NodeInternalIP), ExternalIP: Address(n, corev1.NodeExternalIP),
		Created: n.CreationTimestamp.Time,
	}
}

// client is a client of the cluster's virtual control plane whose every
// call gives up after checks.CallTimeout, so that a control plane that
// hangs holds a request for seconds.
func (s *Service) client(ctx context.Context, c queries.Cluster) (kubernetes.Interface, error) {
	cfg, err := s.Clusters.VirtualConfig(ctx, c)
	if errors.Is(err, clusters.ErrNotReady) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	cfg = checks.Bounded(cfg)
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	return kc, nil
}

// Listed is a node in the list, with the join token it joined with.
type Listed struct {
	Summary
	// TokenID and TokenDescription name the join token the node joined
	// with, the latest if it joined twice; empty if none did.
	TokenID, TokenDescription string
}

// Page is what a cluster's nodes page shows.
type Page struct {
	Cluster queries.Cluster
	// Fresh is how current Nodes are.
	Fresh Freshness
	// Nodes are the cluster's nodes by name, as the health job last
	// recorded them (and as the console left them after acting on them),
	// each with the token it joined with.
	Nodes []Listed
	// Plan is the owner's plan: Name, NameZh and MaxNodesPerCluster; the
	// others are zero.
	Plan queries.Plan
}

// Page is the nodes page of the organization's cluster id (deleted ones
// included), for any member, read from the database alone: it never asks
// the cluster, so the page loads and refreshes without it. Another
// organization's cluster is
// clusters.ErrNotFound.
func (s *Service) Page(ctx context.Context, who orgs.Acting, id int64) (Page, error) {
	q := queries.New(s.Pool)
	r, err := q.NodePage(ctx, queries.NodePageParams{Kind: string(checks.NodeHealth), ID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read)})
	if errors.Is(err, pgx.ErrNoRows) {
		return Page{}, clusters.ErrNotFound
	}
	if err != nil {
		return Page{}, fmt.Errorf("load cluster %d: %w", id, err)
	}
	rows, err := q.NodePageNodes(ctx, queries.NodePageNodesParams{ClusterID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read)})
	if err != nil {
		return Page{}, fmt.Errorf("load nodes of cluster %d: %w", id, err)
	}
	p := Page{
		Cluster: r.Cluster,
		Plan:    queries.Plan{Name: r.PlanName, NameZh: r.PlanNameZh, MaxNodesPerCluster: r.PlanMaxNodes},
		Nodes:   make([]Listed, len(rows)),
	}
	for i, n := range rows {
		// The status and addresses are worked out from the conditions and
		// addresses by the database (migration 023), as fromRow does.
		p.Nodes[i] = Listed{
			Summary: Summary{
				Name: n.Name, Status: n.Status, Unschedulable: n.Unschedulable,
				KubeletVersion: n.KubeletVersion, OS: n.Os, Arch: n.Arch,
				InternalIP: n.InternalIp, ExternalIP: n.ExternalIp, Created: n.NodeCreatedAt.Time, LastSeen: n.LastSeen.Time,
			},
			TokenID: n.TokenID, TokenDescription: n.TokenDescription,
		}
		if len(n.Roles) > 0 {
			p.Nodes[i].Roles = n.Roles
		}
	}
	p.Fresh = freshness(r.CheckedAt, r.UnreachableSince, r.LastError).Of(p.Nodes)
	return p, nil
}

// ListLive is the cluster's nodes by name, read from its control plane.
func (s *Service) ListLive(ctx context.Context, c queries.Cluster) ([]Summary, error) {
	kc, err := s.client(ctx, c)
	if err != nil {
		return nil, err
	}
	list, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("%w: list nodes: %v", ErrUnreachable, err)
	}
	out := make([]Summary, len(list.Items))
	for i := range list.Items {
		out[i] = summarize(&list.Items[i])
	}
	slices.SortFunc(out, func(a, b Summary) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Freshness is how current the recorded nodes are.
type Freshness struct {
	// Updated is when the nodes were last recorded from the cluster: its
	// last successful health check (or, without one, its newest row);
	// zero when never.
	Updated time.Time
	// UnreachableSince is since when the health check has not reached the
	// control plane, zero while it does; LastError says why.
	UnreachableSince time.Time
	LastError        string
}

// ClusterPage is what the cluster page reads with the cluster.
type ClusterPage struct {
	Freshness
	// IngressStatus is where the cluster's managed ingress stands
	// (ingress.StatusOff when never on): the page watches it while a job
	// works on it.
	IngressStatus string
	// NodeCount is how many nodes are recorded for the cluster.
	NodeCount int
	// Events are its newest events, as many as asked for, oldest first.
	Events []queries.ClusterEvent
}

// ClusterPage is the organization's cluster id, deleted or not, for any member, with how current
// its recorded nodes are as its health check says (Freshness), where
// its managed ingress stands and its newest events (at most events of
// them), in one query: another organization's cluster is
// clusters.ErrNotFound.
func (s *Service) ClusterPage(ctx context.Context, who orgs.Acting, id int64, events int) (queries.Cluster, ClusterPage, error) {
	row, err := queries.New(s.Pool).ClusterGetWithCheck(ctx, queries.ClusterGetWithCheckParams{
		Kind: string(checks.NodeHealth), ID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read), EventLimit: int32(events),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return queries.Cluster{}, ClusterPage{}, clusters.ErrNotFound
	}
	if err != nil {
		return queries.Cluster{}, ClusterPage{}, fmt.Errorf("load cluster %d with its health check: %w", id, err)
	}
	page := ClusterPage{Freshness: freshness(row.CheckedAt, row.UnreachableSince, row.LastError), IngressStatus: row.IngressStatus, NodeCount: int(row.NodeCount)}
	if err := json.Unmarshal(row.LatestEvents, &page.Events); err != nil {
		return queries.Cluster{}, ClusterPage{}, fmt.Errorf("cluster %d's events: %w", id, err)
	}
	return row.Cluster, page, nil
}

// freshness is what a cluster's health check (its columns, NULL without
// one) says of its recorded nodes.
func freshness(checkedAt, unreachableSince pgtype.Timestamptz, lastError string) Freshness {
	var f Freshness
	switch {
	case unreachableSince.Valid:
		f.UnreachableSince, f.LastError = unreachableSince.Time, lastError
	case checkedAt.Valid:
		f.Updated = checkedAt.Time
	}
	return f
}

// Of is f for the recorded nodes in list: while the health check fails,
// or where there is none (the rows were recorded directly), the nodes
// were last recorded when the newest row was.
func (f Freshness) Of(list []Listed) Freshness {
	if !f.Updated.IsZero() {
		return f
	}
	for _, n := range list {
		if n.LastSeen.After(f.Updated) {
			f.Updated = n.LastSeen
		}
	}
	return f
}

// ValidName reports whether name can name a Node: a DNS subdomain, as
// the apiserver requires of Node names.
func ValidName(name string) bool {
	return len(validation.IsDNS1123Subdomain(name)) == 0
}

// node reads one Node; a missing one is ErrNotFound.
func node(ctx context.Context, kc kubernetes.Interface, name string) (*corev1.Node, error) {
	n, err := kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("%w: get node %s: %v", ErrUnreachable, name, err)
	}
	return n, nil
}

// LiveTimeout is how long a page, or an action taken from one, waits on a
// cluster's control plane in all: one that does not answer in time is
// ErrUnreachable, and the page shows what the platform last recorded.
const LiveTimeout = 2 * time.Second

// Get is one node and the pods on it, read from the control plane within
// LiveTimeout in all.
func (s *Service) Get(ctx context.Context, c queries.Cluster, name string) (Detail, error) {
	ctx, cancel := context.WithTimeout(ctx, LiveTimeout)
	defer cancel()
	kc, err := s.client(ctx, c)
	if err != nil {
		return Detail{}, err
	}
	n, err := node(ctx, kc, name)
	if err != nil {
		return Detail{}, err
	}
	pods, err := kc.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", name).String(),
	})
	if err != nil {
		return Detail{}, fmt.Errorf("%w: list pods on %s: %v", ErrUnreachable, name, err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return Detail{
		Summary: summarize(n), Conditions: n.Status.Conditions,
		Capacity: n.Status.Capacity, Allocatable: n.Status.Allocatable,
		Taints: n.Spec.Taints, Labels: n.Labels, Pods: pods.Items,
		IngressNode: n.Labels[ingress.NodeLabel] == "true", PublicAddress: ingress.PublicAddress(n),
	}, nil
}

// Recorded is the node as the nodes table last recorded it (its summary
// and conditions, without resources, labels or pods), for when its control
// plane does not answer; a node not recorded is ErrNotFound.
func (s *Service) Recorded(ctx context.Context, c queries.Cluster, name string) (Detail, error) {
	r, err := queries.New(s.Pool).NodeGet(ctx, queries.NodeGetParams{ClusterID: c.ID, Name: name})
	if errors.Is(err, pgx.ErrNoRows) {
		return Detail{}, ErrNotFound
	}
	if err != nil {
		return Detail{}, fmt.Errorf("recorded node %s: %w", name, err)
	}
	sum, conds, err := fromRow(r)
	if err != nil {
		return Detail{}, err
	}
	return Detail{Summary: sum, Conditions: conds, IngressNode: r.Ingress, PublicAddress: r.PublicAddress}, nil
}

// Show is the node read live (Get) or, while its control plane does not
// answer, as last recorded (Recorded) with Recorded set. It is
// ErrUnreachable only for a node that was never recorded.
func (s *Service) Show(ctx context.Context, c queries.Cluster, name string) (Detail, error) {
	d, err := s.Get(ctx, c, name)
	if !errors.Is(err, ErrUnreachable) {
		return d, err
	}
	d, rerr := s.Recorded(ctx, c, name)
	if errors.Is(rerr, ErrNotFound) {
		return Detail{}, err
	}
	if rerr != nil {
		return Detail{}, rerr
	}
	d.Recorded, d.Cause = true, err
	return d, nil
}

// record writes the node's row as the Node object now is, so that the list
// shows the user's own action at once rather than after the next health
// check (whose list, if taken before now, no longer overwrites it).
func record(ctx context.Context, q *queries.Queries, clusterID int64, n *corev1.Node) error {
	p, err := Row(clusterID, n, time.Now())
	if err != nil {
		return err
	}
	if err := q.NodeUpsert(ctx, p); err != nil {
		return fmt.Errorf("record node %s: %w", n.Name, err)
	}
	return nil
}

// ErrPublicAddress is a public address that is not an IP address.
var ErrPublicAddress = errors.New("ErrNodePublicAddress")

// SetIngress marks the node as an ingress node of the cluster's managed
// ingress, or unmarks it, and gives it the public address its host
// names' records get ("" for its ExternalIP): the node's label and
// annotation, which the health job records too. The controller follows
// when the cluster's first ingress node is marked or its last unmarked;
// the CNAME target's records follow at once.
func (s *Service) SetIngress(ctx context.Context, c queries.Cluster, name string, ingressNode bool, publicAddress string, actor audit.Actor) error {
	publicAddress = strings.TrimSpace(publicAddress)
	if publicAddress != "" {
		ip, err := netip.ParseAddr(publicAddress)
		if err != nil || ip.Zone() != "" || ip.IsUnspecified() || ip.IsLoopback() || ip.IsMulticast() {
			return input.Errors{"public_address": ErrPublicAddress.Error()}
		}
		publicAddress = ip.Unmap().String()
	}
	live, cancel := context.WithTimeout(ctx, LiveTimeout)
	defer cancel()
	kc, err := s.client(live, c)
	if err != nil {
		return err
	}
	if _, err := node(live, kc, name); err != nil {
		return err
	}
	label, annotation := any(nil), any(nil)
	if ingressNode {
		label = "true"
	}
	if publicAddress != "" {
		annotation = publicAddress
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":      map[string]any{ingress.NodeLabel: label},
		"annotations": map[string]any{ingress.PublicAddressAnnotation: annotation},
	}})
	if err != nil {
		return fmt.Errorf("encode patch: %w", err)
	}
	n, err := kc.CoreV1().Nodes().Patch(live, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("%w: mark node %s: %v", ErrUnreachable, name, err)
	}
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		before, err := q.NodeIngressCount(ctx, c.ID)
		if err != nil {
			return fmt.Errorf("count ingress nodes: %w", err)
		}
		if err := record(ctx, q, c.ID, n); err != nil {
			return err
		}
		after, err := q.NodeIngressCount(ctx, c.ID)
		if err != nil {
			return fmt.Errorf("count ingress nodes: %w", err)
		}
		if (before > 0) != (after > 0) {
			if err := ingress.Refresh(ctx, tx, s.River, c.ID); err != nil {
				return err
			}
		}
		if err := ingress.ScheduleDNSIfStale(ctx, q, c.ID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, nodeEvent("node.ingress", c, name, map[string]any{"ingress": ingressNode, "public_address": publicAddress}))
	})
}

// Cordon marks the node unschedulable (desired true) or schedulable again.
func (s *Service) Cordon(ctx context.Context, c queries.Cluster, name string, desired bool, actor audit.Actor) error {
	live, cancel := context.WithTimeout(ctx, LiveTimeout)
	defer cancel()
	kc, err := s.client(live, c)
	if err != nil {
		return err
	}
	n, err := node(live, kc, name)
	if err != nil {
		return err
	}
	if err := drain.RunCordonOrUncordon(&drain.Helper{Ctx: live, Client: kc}, n, desired); err != nil {
		return fmt.Errorf("%w: cordon %s: %v", ErrUnreachable, name, err)
	}
	n.Spec.Unschedulable = desired
	action := "node.uncordon"
	if desired {
		action = "node.cordon"
	}
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := record(ctx, q, c.ID, n); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, nodeEvent(action, c, name, nil))
	})
}

func nodeEvent(action string, c queries.Cluster, name string, details map[string]any) audit.Event {
	d := map[string]any{"cluster_id": c.ID, "cluster": c.Name, "node": name}
	for k, v := range details {
		d[k] = v
	}
	return audit.Event{Action: action, TargetType: "node", TargetID: fmt.Sprintf("%d/%s", c.ID, name), Details: d}
}

// ValidDrainOptions checks the options' bounds.
func ValidDrainOptions(o DrainOptions) bool {
	return o.GracePeriodSeconds >= -1 && o.GracePeriodSeconds <= MaxGracePeriodSeconds &&
		o.TimeoutSeconds >= 1 && o.TimeoutSeconds <= MaxTimeoutSeconds
}

// ErrInvalidOptions is options out of bounds.
var ErrInvalidOptions = errors.New("ErrNodeDrainOptions")

// Drain starts draining the node: the operation's row, the audit event and
// the job in one transaction.
func (s *Service) Drain(ctx context.Context, c queries.Cluster, name string, opts DrainOptions, actor audit.Actor) (queries.NodeOperation, error) {
	if !ValidDrainOptions(opts) {
		return queries.NodeOperation{}, ErrInvalidOptions
	}
	return s.start(ctx, c, name, OpDrain, &opts, actor)
}

// Delete starts deleting the Node object, draining it first when drainFirst
// is given.
func (s *Service) Delete(ctx context.Context, c queries.Cluster, name string, drainFirst *DrainOptions, actor audit.Actor) (queries.NodeOperation, error) {
	if drainFirst != nil && !ValidDrainOptions(*drainFirst) {
		return queries.NodeOperation{}, ErrInvalidOptions
	}
	return s.start(ctx, c, name, OpDelete, drainFirst, actor)
}

func (s *Service) start(ctx context.Context, c queries.Cluster, name, kind string, opts *DrainOptions, actor audit.Actor) (queries.NodeOperation, error) {
	live, cancel := context.WithTimeout(ctx, LiveTimeout)
	defer cancel()
	kc, err := s.client(live, c)
	if err != nil {
		return queries.NodeOperation{}, err
	}
	if _, err := node(live, kc, name); err != nil {
		return queries.NodeOperation{}, err
	}
	var op queries.NodeOperation
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		// One operation per node at a time: the cluster row's lock
		// serialises starts.
		if _, err := q.ClusterLock(ctx, c.ID); err != nil {
			return fmt.Errorf("lock cluster %d: %w", c.ID, err)
		}
		if _, err := q.NodeOperationRunning(ctx, queries.NodeOperationRunningParams{ClusterID: c.ID, NodeName: name}); err == nil {
			return ErrOperationBusy
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("running operations of %s: %w", name, err)
		}
		op, err = q.NodeOperationCreate(ctx, queries.NodeOperationCreateParams{ClusterID: c.ID, NodeName: name, Kind: kind})
		if err != nil {
			return fmt.Errorf("create node operation: %w", err)
		}
		details := map[string]any{"operation_id": op.ID}
		if opts != nil {
			details["drain"] = opts
		}
		if err := audit.Record(ctx, q, actor, nodeEvent("node."+kind, c, name, details)); err != nil {
			return err
		}
		args := OperationArgs{OperationID: op.ID, ClusterID: c.ID, NodeName: name, Drain: opts, DeleteNode: kind == OpDelete}
		if _, err := s.River.InsertTx(ctx, tx, args, nil); err != nil {
			return fmt.Errorf("queue node operation: %w", err)
		}
		return nil
	})
	return op, err
}

// Operation is one operation of the cluster's; another cluster's is
// ErrNotFound.
func (s *Service) Operation(ctx context.Context, c queries.Cluster, id int64) (queries.NodeOperation, error) {
	op, err := queries.New(s.Pool).NodeOperationGet(ctx, queries.NodeOperationGetParams{ID: id, ClusterID: c.ID})
	if errors.Is(err, pgx.ErrNoRows) {
		return op, ErrNotFound
	}
	if err != nil {
		return op, fmt.Errorf("load node operation %d: %w", id, err)
	}
	return op, nil
}

// LatestOperation is the node's latest operation, if any.
func (s *Service) LatestOperation(ctx context.Context, c queries.Cluster, name string) (queries.NodeOperation, bool, error) {
	op, err := queries.New(s.Pool).NodeOperationLatest(ctx, queries.NodeOperationLatestParams{ClusterID: c.ID, NodeName: name})
	if errors.Is(err, pgx.ErrNoRows) {
		return op, false, nil
	}
	if err != nil {
		return op, false, fmt.Errorf("latest operation of %s: %w", name, err)
	}
	return op, true, nil
}

// MaxStaleCleanupHours bounds the stale-node clean-up period: a year.
const MaxStaleCleanupHours = 8760

// ErrStaleCleanupHours is a clean-up period out of bounds.
var ErrStaleCleanupHours = errors.New("ErrStaleCleanupHours")

// SetStaleCleanup turns the cluster's stale-node clean-up on, deleting
// nodes NotReady for longer than hours (1 to MaxStaleCleanupHours), or off
// (hours 0), with its audit event in the same transaction.
func (s *Service) SetStaleCleanup(ctx context.Context, c queries.Cluster, hours int, actor audit.Actor) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		return s.SetStaleCleanupTx(ctx, tx, c, hours, actor)
	})
}

// SetStaleCleanupTx is SetStaleCleanup in the caller's transaction (a
// clusters.Edit step).
func (s *Service) SetStaleCleanupTx(ctx context.Context, tx pgx.Tx, c queries.Cluster, hours int, actor audit.Actor) error {
	if hours < 0 || hours > MaxStaleCleanupHours {
		return ErrStaleCleanupHours
	}
	period := pgtype.Int4{Int32: int32(hours), Valid: hours > 0}
	q := queries.New(tx)
	if err := q.ClusterSetStaleNodeCleanup(ctx, queries.ClusterSetStaleNodeCleanupParams{ID: c.ID, Hours: period}); err != nil {
		return fmt.Errorf("set stale node clean-up: %w", err)
	}
	details := map[string]any{"enabled": period.Valid}
	if period.Valid {
		details["hours"] = period.Int32
	}
	return audit.Record(ctx, q, actor, audit.Event{Action: "cluster.stale_node_cleanup", TargetType: "cluster", TargetID: fmt.Sprint(c.ID), Details: details})
}
