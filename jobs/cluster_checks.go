package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/queries"
)

// checkKind is one kind of per-cluster check: the job queued for a
// cluster whose check is due.
type checkKind struct {
	kind checks.Kind
	job  func(clusterID int64) river.InsertManyParams
	// anyState: the kind checks clusters in every state, not only ready
	// ones.
	anyState bool
}

// checkKinds are the per-cluster checks the dispatcher queues.
func checkKinds() []checkKind {
	return []checkKind{
		{kind: checks.NodeHealth, job: func(id int64) river.InsertManyParams {
			return river.InsertManyParams{Args: nodes.HealthArgs{ClusterID: id}}
		}},
		{kind: checks.JoinTokenSync, job: func(id int64) river.InsertManyParams {
			return river.InsertManyParams{Args: jointokens.SyncArgs{ClusterID: id}}
		}},
		{kind: checks.NodeQuotaSync, job: func(id int64) river.InsertManyParams {
			return river.InsertManyParams{Args: nodequota.SyncArgs{ClusterID: id}, InsertOpts: nodequota.ResyncOpts()}
		}},
		{kind: checks.MetricsScrape, job: func(id int64) river.InsertManyParams {
			return river.InsertManyParams{Args: metrics.ScrapeArgs{ClusterID: id}}
		}},
		{kind: checks.DNSRecord, anyState: true, job: func(id int64) river.InsertManyParams {
			return river.InsertManyParams{Args: dnsrecords.SyncArgs{ClusterID: id}}
		}},
		{kind: checks.IngressDNS, anyState: true, job: func(id int64) river.InsertManyParams {
			return river.InsertManyParams{Args: ingress.DNSArgs{ClusterID: id}}
		}},
		{kind: checks.IngressHostnames, anyState: true, job: func(id int64) river.InsertManyParams {
			return river.InsertManyParams{Args: ingress.HostnamesArgs{ClusterID: id}}
		}},
		{kind: checks.IngressEdge, anyState: true, job: func(id int64) river.InsertManyParams {
			return river.InsertManyParams{Args: ingress.EdgeArgs{ClusterID: id}}
		}},
	}
}

const (
	// checkBatch is how many due checks one transaction claims and queues.
	checkBatch = 1000
	// checksPerRun bounds what one run of the dispatcher queues per kind,
	// so that a run stays short; the next tick takes the rest.
	checksPerRun = 10 * checkBatch
)

// ClusterChecksWorker is the dispatcher: every tick it claims the due
// checks of each kind in batches (oldest first, only their cluster ids)
// and queues one job per cluster in the same transaction. The claim leases
// each row (checks.Lease) and the jobs are unique while they wait, so a
// cluster never has two checks of a kind at once.
type ClusterChecksWorker struct {
	river.WorkerDefaults[checks.DispatchArgs]
	Pool *pgxpool.Pool
	// Transitions, shared with the check workers, is flushed each run.
	Transitions *checks.Transitions
}

// Timeout implements river.Worker.
func (w *ClusterChecksWorker) Timeout(*river.Job[checks.DispatchArgs]) time.Duration {
	return time.Minute
}

// Work implements river.Worker.
func (w *ClusterChecksWorker) Work(ctx context.Context, _ *river.Job[checks.DispatchArgs]) error {
	client := river.ClientFromContext[pgx.Tx](ctx)
	if w.Transitions != nil {
		w.Transitions.Flush(ctx)
	}
	for _, k := range checkKinds() {
		for queued := 0; queued < checksPerRun; {
			n, err := w.dispatch(ctx, client, k)
			if err != nil {
				return err
			}
			queued += n
			if n < checkBatch {
				break
			}
		}
	}
	return nil
}

// dispatch claims one batch of due checks of kind k, queues the jobs of
// the ready clusters' and returns how many it claimed.
func (w *ClusterChecksWorker) dispatch(ctx context.Context, client *river.Client[pgx.Tx], k checkKind) (int, error) {
	var claimed int
	err := pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		var ids []int64
		var err error
		if k.anyState {
			ids, err = checks.ClaimAnyState(ctx, queries.New(tx), k.kind, checkBatch, time.Now())
			claimed = len(ids)
		} else {
			ids, claimed, err = checks.Claim(ctx, queries.New(tx), k.kind, checkBatch, time.Now())
		}
		if err != nil || len(ids) == 0 {
			return err
		}
		params := make([]river.InsertManyParams, len(ids))
		for i, id := range ids {
			params[i] = k.job(id)
		}
		if _, err := client.InsertManyTx(ctx, tx, params); err != nil {
			return fmt.Errorf("queue %s checks: %w", k.kind, err)
		}
		return nil
	})
	return claimed, err
}
