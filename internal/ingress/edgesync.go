package ingress

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
	"github.com/riverqueue/river"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// A cluster's routes through the platform edge: a per-cluster check
// (checks.IngressEdge) keeps the host's objects (SyncEdgeRoutes) equal to
// the cluster's switch, mode, host names and controller pods, every
// EdgeInterval while the cluster goes through the edge; switching,
// choosing the mode, the controller becoming ready and a host name bound
// or removed make it due at once.
const EdgeInterval = 15 * time.Second

// EdgeArgs converges one cluster's routes through the platform edge
// (worked by jobs.IngressEdgeWorker, queued when its check is due).
type EdgeArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (EdgeArgs) Kind() string { return "ingress_edge" }

// InsertOpts implements river.JobArgsWithInsertOpts: the check comes due
// again (sooner while it fails), so River does not retry it.
func (EdgeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: checks.Queue, MaxAttempts: 1, UniqueOpts: checks.UniqueWhileWaiting()}
}

// The states of a cluster's routes through the edge
// (cluster_ingress.edge_state); "" when it does not go through the edge.
const (
	EdgeRouted  = "routed"
	EdgePending = "pending"
	EdgeError   = "error"
)

// SyncEdge converges the cluster's routes through the platform edge and
// records where they stand; it returns when the check is next due (zero:
// idle until asked). A failure is recorded and returned as
// checks.Unreachable, so that the check backs off.
func (s *Service) SyncEdge(ctx context.Context, clusterID int64) (time.Time, error) {
	return s.check(ctx, clusterID, "IngressEdgeError", s.syncEdge,
		func(row queries.ClusterIngress) bool { return row.EdgeState == EdgeError },
		func(ctx context.Context, q *queries.Queries, row queries.ClusterIngress, cause error) error {
			return q.IngressEdgeSave(ctx, queries.IngressEdgeSaveParams{
				ClusterID: row.ClusterID, State: EdgeError, Message: input.Truncate(cause.Error(), 500), Pods: row.EdgePods, Gateway: row.EdgeGateway,
			})
		})
}

// ErrEdgeNotFailed: only routes that could not be written are retried
// (catalog message ID).
var ErrEdgeNotFailed = errors.New("ErrIngressEdgeNotFailed")

// RunEdgeCheck runs the cluster's edge check and paces the next one:
// every EdgeInterval while it goes through the edge, idle otherwise,
// backing off while the host or the cluster does not answer.
func (s *Service) RunEdgeCheck(ctx context.Context, clusterID int64, log *checks.Transitions) error {
	next, err := s.SyncEdge(ctx, clusterID)
	rec := checks.Recorder{Q: queries.New(s.Pool), Log: log}
	return rec.Done(ctx, clusterID, checks.IngressEdge, EdgeInterval, next, err)
}

// RetryEdge runs the edge check of a cluster whose routes could not be
// written now, for its owner (a cluster event and an audit event), instead
// of at the end of its backoff, which starts over if it succeeds. It
// reports whether the routes are written now.
func (s *Service) RetryEdge(ctx context.Context, c queries.Cluster, actor audit.Actor) (bool, error) {
	row, err := queries.New(s.Pool).IngressGet(ctx, c.ID)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && row.EdgeState != EdgeError) {
		return false, ErrEdgeNotFailed
	}
	if err != nil {
		return false, fmt.Errorf("load managed ingress of cluster %d: %w", c.ID, err)
	}
	if err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := clusterEvent(ctx, q, c.ID, "info", "IngressEdgeRetried", ""); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "cluster.managed_ingress_edge_retry", TargetType: "cluster", TargetID: fmt.Sprint(c.ID),
			Details: map[string]any{"cluster": c.Name},
		})
	}); err != nil {
		return false, err
	}
	if err := s.RunEdgeCheck(ctx, c.ID, nil); err != nil {
		return false, err
	}
	if row, err = queries.New(s.Pool).IngressGet(ctx, c.ID); err != nil {
		return false, fmt.Errorf("load managed ingress of cluster %d: %w", c.ID, err)
	}
	return row.EdgeState != EdgeError, nil
}

func (s *Service) syncEdge(ctx context.Context, q *queries.Queries, row queries.ClusterIngress) (time.Time, error) {
	c, err := q.ClusterGetByID(ctx, row.ClusterID)
	if err != nil {
		return time.Time{}, fmt.Errorf("load cluster %d: %w", row.ClusterID, err)
	}
	st, err := LoadSettings(ctx, q)
	if err != nil {
		return time.Time{}, err
	}
	rt, err := settings.Load(ctx, q, s.Box)
	var unreadable *settings.UnreadableError
	if err != nil && !errors.As(err, &unreadable) {
		return time.Time{}, err
	}
	// Routed once the controller has been ready since it was switched on
	// (ready_at), and kept through what follows: an upgrade of the
	// cluster, a new rollout of the controller, or one that fails, leave
	// the pods that still serve routed (the EndpointSlices hold the Ready
	// ones).
	routed := row.Enabled && row.Mode == ModeEdge && row.ReadyAt.Valid &&
		c.Status != clusters.StatusDeleted && c.Status != clusters.StatusDeleting && !c.DeleteRequestedAt.Valid &&
		st.GatewayClass != "" && st.AppsBaseDomain != ""
	if !routed && row.EdgeState == "" {
		return time.Time{}, nil // nothing there to take out
	}
	cfg, err := rt.HostConfig(s.KubeconfigPath)
	if err != nil {
		return time.Time{}, fmt.Errorf("reach the host cluster: %w", err)
	}
	host, err := dynamic.NewForConfig(checks.Bounded(cfg))
	if err != nil {
		return time.Time{}, fmt.Errorf("host cluster client: %w", err)
	}
	ns := clusters.Namespace(c)
	if !routed {
		if err := RemoveEdgeRoutes(ctx, host, ns); err != nil && !apierrors.IsNotFound(err) {
			return time.Time{}, err
		}
		if err := q.IngressEdgeSave(ctx, queries.IngressEdgeSaveParams{ClusterID: c.ID, Pods: []string{}, Gateway: []string{}}); err != nil {
			return time.Time{}, fmt.Errorf("record the edge of cluster %d: %w", c.ID, err)
		}
		return time.Time{}, clusterEvent(ctx, q, c.ID, "info", "IngressEdgeRemoved", "")
	}
	if c.Status != clusters.StatusReady {
		// Being changed: its control plane is not to be asked; the routes
		// stay as they are until it is ready again.
		return time.Now().Add(EdgeInterval), nil
	}
	pods, err := s.controllerPods(ctx, c)
	if err != nil {
		return time.Time{}, err
	}
	names, err := q.HostnameListByCluster(ctx, c.ID)
	if err != nil {
		return time.Time{}, fmt.Errorf("list host names of cluster %d: %w", c.ID, err)
	}
	hosts := make([]EdgeHost, len(names))
	for i, n := range names {
		hosts[i] = EdgeHost{Name: n.Name, Apps: strings.HasSuffix(n.Name, "."+st.AppsBaseDomain)}
	}
	shared, err := s.sharedEdge(ctx, q, host, st)
	if err != nil {
		return time.Time{}, err
	}
	gateway, wildcard := shared.Gateway.Addresses, shared.Wildcard
	if err := SyncEdgeRoutes(ctx, host, ns, hosts, pods); err != nil {
		return time.Time{}, err
	}
	state, msg, err := s.recordEdgeStatus(ctx, q, host, ns, names, shared.Gateway)
	if err != nil {
		return time.Time{}, err
	}
	if wildcard.State != CertReady {
		// The names under the apps base domain wait for it; the others
		// do not.
		word := "wildcard certificate *." + st.AppsBaseDomain + ": " + wildcard.State
		if wildcard.Error != "" {
			word += " (" + wildcard.Error + ")"
		}
		msg = strings.TrimPrefix(msg+"; "+word, "; ")
	}
	addrs := addrStrings(pods)
	if row.EdgeState != state || !slices.Equal(row.EdgePods, addrs) {
		if err := clusterEvent(ctx, q, c.ID, "info", "IngressEdgeChanged", fmt.Sprintf("%s; pods %s", state, strings.Join(addrs, ", "))); err != nil {
			return time.Time{}, err
		}
	}
	if err := q.IngressEdgeSave(ctx, queries.IngressEdgeSaveParams{ClusterID: c.ID, State: state, Message: input.Truncate(msg, 500), Pods: addrs, Gateway: gateway}); err != nil {
		return time.Time{}, fmt.Errorf("record the edge of cluster %d: %w", c.ID, err)
	}
	// The CNAME target's records hold the Gateway's addresses.
	if !slices.Equal(row.EdgeGateway, gateway) {
		if err := checks.Schedule(ctx, q, c.ID, checks.IngressDNS, time.Now()); err != nil {
			return time.Time{}, err
		}
	}
	return time.Now().Add(EdgeInterval), nil
}

// recordEdgeStatus writes what the Gateway's implementation says of each
// host name's routes, and of the listeners and Gateway they attach to,
// and sums it up: routed when every route of every name is accepted with
// its references resolved and the Gateway and its listeners programmed,
// pending with the first condition that is not.
func (s *Service) recordEdgeStatus(ctx context.Context, q *queries.Queries, host dynamic.Interface, ns string, names []queries.ClusterHostname, gw GatewayState) (string, string, error) {
	status, err := EdgeStatus(ctx, host, ns, gw)
	if err != nil {
		return "", "", err
	}
	state, msg := EdgeRouted, ""
	for _, n := range names {
		word := status[n.Name].Word()
		if word != "ok" && state == EdgeRouted {
			state, msg = EdgePending, n.Name+": "+word
		}
		if word == n.EdgeStatus {
			continue
		}
		if err := q.HostnameSetEdgeStatus(ctx, queries.HostnameSetEdgeStatusParams{ClusterID: n.ClusterID, Name: n.Name, EdgeStatus: input.Truncate(word, 500)}); err != nil {
			return "", "", fmt.Errorf("record the edge status of %s: %w", n.Name, err)
		}
	}
	return state, msg, nil
}

// controllerPods are the addresses of the managed ingress controller's
// Ready pods in the virtual cluster.
func (s *Service) controllerPods(ctx context.Context, c queries.Cluster) ([]netip.Addr, error) {
	if s.Virtual == nil {
		return nil, errors.New("no way to reach the virtual cluster")
	}
	cfg, err := s.Virtual(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("reach the control plane: %w", err)
	}
	client, err := kubernetes.NewForConfig(checks.Bounded(cfg))
	if err != nil {
		return nil, fmt.Errorf("virtual cluster client: %w", err)
	}
	list, err := client.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the controller's pods: %w", err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return readyIPs(pods), nil
}

// readyIPs are the addresses of the controller's Ready pods among pods,
// sorted.
func readyIPs(pods []*corev1.Pod) []netip.Addr {
	var out []netip.Addr
	for _, p := range pods {
		if !ownedByDaemonSet(p) || !podReady(p) {
			continue
		}
		for _, ip := range p.Status.PodIPs {
			if a, err := netip.ParseAddr(ip.IP); err == nil {
				out = append(out, a)
			}
		}
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(out)
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" })
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// ScheduleEdge makes the cluster's edge check due now, in the caller's
// transaction: what its routes are made of changed.
func ScheduleEdge(ctx context.Context, q *queries.Queries, clusterID int64) error {
	return checks.Schedule(ctx, q, clusterID, checks.IngressEdge, time.Now())
}

// sharedEdgeKey is the settings row of the shared objects' state.
const sharedEdgeKey = "edge_shared"

// sharedEdgeFresh is how long the shared objects' state stands before a
// cluster's check applies them again: every edge cluster's check needs
// them, and they are the same for all.
const sharedEdgeFresh = time.Minute

// SharedEdge is the state of the objects every edge cluster shares: the
// Gateway's (addresses, conditions, listeners') and the wildcard
// certificate's, as applied and read at Checked for Class and Domain.
type SharedEdge struct {
	Class    string       `json:"class"`
	Domain   string       `json:"domain"`
	Gateway  GatewayState `json:"gateway"`
	Wildcard CertStatus   `json:"wildcard"`
	Checked  time.Time    `json:"checked"`
}

// sharedEdge applies the shared Gateway and the wildcard certificate and
// reads them back, at most once per sharedEdgeFresh for the settings
// given; otherwise it returns what was read last. Two checks that find it
// stale at once both apply them, which changes nothing.
func (s *Service) sharedEdge(ctx context.Context, q *queries.Queries, host dynamic.Interface, st Settings) (SharedEdge, error) {
	var cur SharedEdge
	row, err := q.SettingGet(ctx, sharedEdgeKey)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return SharedEdge{}, fmt.Errorf("load the shared edge state: %w", err)
	}
	if err == nil {
		if err := json.Unmarshal(row.Value, &cur); err != nil {
			return SharedEdge{}, fmt.Errorf("decode the shared edge state: %w", err)
		}
		// A state written before the Gateway's conditions were kept has
		// no gateway addresses (nil; read ones are never nil): stale.
		if cur.Class == st.GatewayClass && cur.Domain == st.AppsBaseDomain && cur.Gateway.Addresses != nil && time.Since(cur.Checked) < sharedEdgeFresh {
			return cur, nil
		}
	}
	if err := EnsureGateway(ctx, host, st.GatewayClass, st.AppsBaseDomain); err != nil {
		return SharedEdge{}, err
	}
	next := SharedEdge{Class: st.GatewayClass, Domain: st.AppsBaseDomain, Checked: time.Now()}
	if next.Gateway, err = ReadGateway(ctx, host); err != nil {
		return SharedEdge{}, err
	}
	dnsSet, err := dnsrecords.Load(ctx, q, s.Box)
	if err != nil {
		return SharedEdge{}, err
	}
	if next.Wildcard, err = EnsureWildcard(ctx, host, st.AppsBaseDomain, st.ACMEServer, dnsSet); err != nil {
		return SharedEdge{}, err
	}
	b, err := json.Marshal(next)
	if err != nil {
		return SharedEdge{}, fmt.Errorf("encode the shared edge state: %w", err)
	}
	if err := q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: sharedEdgeKey, Value: b}); err != nil {
		return SharedEdge{}, fmt.Errorf("store the shared edge state: %w", err)
	}
	return next, nil
}
