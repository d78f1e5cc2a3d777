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
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/queries"
)

// HostNodesInterval is how often the host cluster's nodes are recorded.
const HostNodesInterval = 30 * time.Second

// hostNodesTimeout bounds one run: a host that hangs is tried again at
// the next interval.
const hostNodesTimeout = 20 * time.Second

// HostNodesWorker records what the edge routes to that only the host
// knows: its nodes (for NodePort clusters) and the addresses of
// LoadBalancer clusters' Services.
type HostNodesWorker struct {
	river.WorkerDefaults[edge.HostNodesArgs]
	Pool           *pgxpool.Pool
	Box            *secrets.Box
	KubeconfigPath string
	Logger         *slog.Logger
}

// Timeout implements river.Worker.
func (w *HostNodesWorker) Timeout(*river.Job[edge.HostNodesArgs]) time.Duration {
	return hostNodesTimeout
}

// Work implements river.Worker. Without a host cluster there is nothing
// to record; a host that cannot be reached leaves the rows as they were:
// the job completes (it is logged), and the next run tries again. It is
// not retried sooner, nor kept as a failed job every 30 seconds.
func (w *HostNodesWorker) Work(ctx context.Context, job *river.Job[edge.HostNodesArgs]) error {
	q := queries.New(w.Pool)
	rt, err := settings.Load(ctx, q, w.Box)
	if err != nil {
		return fmt.Errorf("load settings: %w", err)
	}
	cfg, err := rt.HostConfig(w.KubeconfigPath)
	if errors.Is(err, settings.ErrNoHostCluster) {
		return nil
	}
	var client kubernetes.Interface
	if err == nil {
		client, err = kubernetes.NewForConfig(cfg)
	}
	var nodes []edge.HostNode
	var lbs map[int64]string
	if err == nil {
		nodes, err = edge.ListHostNodes(ctx, client)
	}
	if err == nil {
		lbs, err = vcluster.LoadBalancerAddresses(ctx, client)
	}
	if err != nil {
		w.Logger.WarnContext(ctx, "host nodes and load balancer addresses not recorded", "error", err)
		return nil
	}
	return pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := edge.RecordHostNodes(ctx, q, nodes); err != nil {
			return err
		}
		// A LoadBalancer address that changed after the cluster became
		// ready (the reconcile job records the first).
		ids, addrs := make([]int64, 0, len(lbs)), make([]string, 0, len(lbs))
		for id, a := range lbs {
			ids, addrs = append(ids, id), append(addrs, a)
		}
		if _, err := q.ClusterSetLBAddresses(ctx, queries.ClusterSetLBAddressesParams{Ids: ids, Addrs: addrs}); err != nil {
			return fmt.Errorf("record load balancer addresses: %w", err)
		}
		return nil
	})
}
