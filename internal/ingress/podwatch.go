package ingress

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/queries"
)

// The edge pod watch: the EndpointSlices of a cluster routed through the
// edge follow its controller's pods within seconds, not only at its next
// check. One worker process at a time (the holder of an advisory lock)
// watches the pods of the managed ingress controller in every such
// cluster and makes the cluster's edge check due as soon as the Ready
// pods' addresses differ from those its slices hold; the check (queued by
// the next dispatch, every few seconds) writes them.
const (
	// PodWatchLock is the advisory lock key of the process that watches.
	PodWatchLock int64 = 0x6b62_6564_6765_7077 // "kbedgepw"
	// PodWatchRefresh is how often the routed clusters are listed again,
	// and how often a process that does not watch asks for the lock.
	PodWatchRefresh = 10 * time.Second
	// PodWatchMax is how many clusters one process watches; the others
	// follow their pods at each check (EdgeInterval).
	PodWatchMax = 2000
)

// PodWatch watches the controller pods of the clusters routed through the
// edge (see above). Run it in every worker process: one watches, the
// others wait to take over.
type PodWatch struct {
	Pool *pgxpool.Pool
	// Virtual is how the virtual clusters are reached.
	Virtual func(context.Context, queries.Cluster) (*rest.Config, error)
	Logger  *slog.Logger
	// Refresh and Max: zero means PodWatchRefresh and PodWatchMax.
	Refresh time.Duration
	Max     int

	mu       sync.Mutex
	watching []int64
}

// Watching is the clusters watched now, in id order (none in a process
// that does not hold the lock).
func (w *PodWatch) Watching() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.watching)
}

func (w *PodWatch) refresh() time.Duration {
	if w.Refresh > 0 {
		return w.Refresh
	}
	return PodWatchRefresh
}

// Run takes the lock when it is free and watches while it holds it, until
// ctx ends.
func (w *PodWatch) Run(ctx context.Context) {
	for {
		err := w.lead(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			w.Logger.WarnContext(ctx, "edge pod watch stopped; trying again", "error", err, "after", w.refresh())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.refresh()):
		}
	}
}

// lead holds its own connection (the lock is the session's) and, while it
// holds the lock, keeps a watcher per routed cluster. It returns nil when
// another process holds the lock.
func (w *PodWatch) lead(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, w.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var held bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", PodWatchLock).Scan(&held); err != nil {
		return fmt.Errorf("take the edge pod watch lock: %w", err)
	}
	if !held {
		return nil
	}
	w.Logger.InfoContext(ctx, "watching the controller pods of the clusters routed through the edge")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchers := map[int64]*podWatcher{}
	// failures backs off the clusters whose watch ended in an error.
	type failure struct {
		n     int
		until time.Time
	}
	failures := map[int64]failure{}
	defer func() {
		for _, pw := range watchers {
			pw.cancel()
		}
		for _, pw := range watchers {
			<-pw.done
		}
		w.setWatching(nil)
	}()
	max := w.Max
	if max <= 0 {
		max = PodWatchMax
	}
	tick := time.NewTicker(w.refresh())
	defer tick.Stop()
	warnedFull := false
	for {
		// The lock is the connection's: one that no longer answers may
		// have lost it.
		if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
			return fmt.Errorf("edge pod watch lock connection: %w", err)
		}
		rows, err := queries.New(w.Pool).IngressEdgeWatched(ctx, int32(max+1))
		if err != nil {
			return fmt.Errorf("list the clusters routed through the edge: %w", err)
		}
		if len(rows) > max {
			rows = rows[:max]
			if !warnedFull {
				w.Logger.WarnContext(ctx, "more clusters routed through the edge than one process watches; the rest follow their pods at each check", "max", max, "check_interval", EdgeInterval)
				warnedFull = true
			}
		}
		want := make(map[int64][]string, len(rows))
		for _, r := range rows {
			want[r.ClusterID] = r.EdgePods
		}
		now := time.Now()
		for id, pw := range watchers {
			select {
			case <-pw.done:
				f := failures[id]
				f.n++
				f.until = now.Add(min(w.refresh()<<min(f.n, 10), checks.MaxBackoff))
				failures[id] = f
				w.Logger.WarnContext(ctx, "edge pod watch of a cluster ended", "cluster_id", id, "error", context.Cause(pw.ctx), "retry_at", f.until)
				delete(watchers, id)
				continue
			default:
			}
			pods, ok := want[id]
			if !ok {
				pw.cancel()
				<-pw.done
				delete(watchers, id)
				delete(failures, id)
				continue
			}
			pw.setRecorded(pods)
		}
		for id, pods := range want {
			if _, ok := watchers[id]; ok || now.Before(failures[id].until) {
				continue
			}
			watchers[id] = w.start(ctx, id, pods)
		}
		for id := range failures {
			if _, ok := want[id]; !ok {
				delete(failures, id)
			}
		}
		ids := make([]int64, 0, len(watchers))
		for id := range watchers {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		w.setWatching(ids)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (w *PodWatch) setWatching(ids []int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watching = ids
}

// podWatcher follows one cluster's controller pods.
type podWatcher struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	poke   chan struct{}

	mu sync.Mutex
	// recorded is what the cluster's EndpointSlices hold (edge_pods);
	// asked the addresses the check was last made due for.
	recorded, asked []string
}

func (pw *podWatcher) setRecorded(pods []string) {
	pw.mu.Lock()
	changed := !slices.Equal(pw.recorded, pods)
	pw.recorded = pods
	pw.mu.Unlock()
	if changed {
		pw.nudge()
	}
}

func (pw *podWatcher) nudge() {
	select {
	case pw.poke <- struct{}{}:
	default:
	}
}

// start watches cluster id's controller pods until its context ends or
// the watch fails (ctx's cause says why).
func (w *PodWatch) start(parent context.Context, id int64, recorded []string) *podWatcher {
	ctx, cancel := context.WithCancelCause(parent)
	pw := &podWatcher{ctx: ctx, cancel: func() { cancel(nil) }, done: make(chan struct{}), poke: make(chan struct{}, 1), recorded: recorded}
	go func() {
		defer close(pw.done)
		if err := w.watch(ctx, pw, id); err != nil {
			cancel(err)
		}
	}()
	return pw
}

func (w *PodWatch) watch(ctx context.Context, pw *podWatcher, id int64) error {
	c, err := queries.New(w.Pool).ClusterGetByID(ctx, id)
	if err != nil {
		return fmt.Errorf("load cluster %d: %w", id, err)
	}
	cfg, err := w.Virtual(ctx, c)
	if err != nil {
		return fmt.Errorf("reach the control plane: %w", err)
	}
	// Lists are bounded like every call to a control plane; a watch is
	// not (the reflector asks the server to end it after some minutes,
	// and HTTP/2 health checks notice a peer gone silent).
	lister, err := kubernetes.NewForConfig(checks.Bounded(cfg))
	if err != nil {
		return fmt.Errorf("virtual cluster client: %w", err)
	}
	unbounded := rest.CopyConfig(cfg)
	unbounded.Timeout = 0
	watcher, err := kubernetes.NewForConfig(unbounded)
	if err != nil {
		return fmt.Errorf("virtual cluster client: %w", err)
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return lister.CoreV1().Pods(Namespace).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return watcher.CoreV1().Pods(Namespace).Watch(ctx, opts)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	// The reflector lists and watches again after a failure, backing off
	// on its own; refused credentials end this watcher instead, and the
	// lead starts it again (backing off too) with the cluster's kubeconfig
	// read anew.
	failed := make(chan error, 1)
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		if !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err) {
			return
		}
		select {
		case failed <- err:
		default:
		}
	}); err != nil {
		return fmt.Errorf("watch error handler: %w", err)
	}
	poke := func(any) { pw.nudge() }
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke,
	}); err != nil {
		return fmt.Errorf("pod event handler: %w", err)
	}
	infCtx, stop := context.WithCancel(ctx)
	defer stop()
	go inf.RunWithContext(infCtx)
	// Events may all come before the cache counts as synced: compare once
	// it is.
	go func() {
		if cache.WaitForCacheSync(infCtx.Done(), inf.HasSynced) {
			pw.nudge()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			return fmt.Errorf("watch the controller's pods: %w", err)
		case <-pw.poke:
		}
		if !inf.HasSynced() {
			continue
		}
		var list []*corev1.Pod
		for _, o := range inf.GetStore().List() {
			if p, ok := o.(*corev1.Pod); ok {
				list = append(list, p)
			}
		}
		pods := addrStrings(readyIPs(list))
		pw.mu.Lock()
		due := !slices.Equal(pods, pw.recorded) && !slices.Equal(pods, pw.asked)
		if due {
			pw.asked = pods
		}
		pw.mu.Unlock()
		if !due {
			continue
		}
		if err := ScheduleEdge(ctx, queries.New(w.Pool), id); err != nil {
			return err
		}
		w.Logger.DebugContext(ctx, "controller pods changed; edge check due", "cluster_id", id, "pods", pods)
	}
}
