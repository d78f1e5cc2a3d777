package jobs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/queries"
)

// JoinTokenSyncInterval is how often the tokens of ready clusters are
// synced with their virtual control planes.
const JoinTokenSyncInterval = 30 * time.Second

// JoinTokenSyncArgs asks for one cluster's join tokens to be synced with
// the CSRs and Nodes in its virtual control plane (jointokens.Service.Sync).
// The periodic JoinTokenSyncAll asks for it, and so does a join script
// that reports its join step, so the console learns of the node at once.
// One waits per cluster at most; a finished one does not stop the next.
type JoinTokenSyncArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (JoinTokenSyncArgs) Kind() string { return "join_token_sync" }

// InsertOpts implements river.JobArgsWithInsertOpts. River requires the
// running state among the unique ones: a request that arrives while one
// runs is dropped, and the next periodic run picks its node up.
func (JoinTokenSyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueClusters, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateScheduled,
	}}}
}

// JoinTokenSyncWorker syncs one cluster's join tokens and tells the owner
// of the nodes that joined.
type JoinTokenSyncWorker struct {
	river.WorkerDefaults[JoinTokenSyncArgs]
	Tokens  *jointokens.Service
	Notices Notices
}

// Email templates of joins: one node, or several in one sync.
const (
	EmailNodeJoined  = "NodeJoined"
	EmailNodesJoined = "NodesJoined"
)

// joinedNamesShown bounds the node names one notice lists.
const joinedNamesShown = 10

// Timeout implements river.Worker: a few API calls.
func (w *JoinTokenSyncWorker) Timeout(*river.Job[JoinTokenSyncArgs]) time.Duration {
	return time.Minute
}

// Work implements river.Worker.
func (w *JoinTokenSyncWorker) Work(ctx context.Context, job *river.Job[JoinTokenSyncArgs]) error {
	if err := w.Tokens.Sync(ctx, job.Args.ClusterID); err != nil {
		return err
	}
	return w.noticeJoins(ctx, job.Args.ClusterID)
}

// noticeJoins tells the owner of the joins not told yet, in one notice,
// in the transaction that claims them.
func (w *JoinTokenSyncWorker) noticeJoins(ctx context.Context, clusterID int64) error {
	return pgx.BeginFunc(ctx, w.Tokens.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		joins, err := q.JoinTokenNodeClaimNotices(ctx, clusterID)
		if err != nil {
			return fmt.Errorf("claim join notices of cluster %d: %w", clusterID, err)
		}
		if len(joins) == 0 {
			return nil
		}
		c, err := q.ClusterGetByID(ctx, clusterID)
		if err != nil {
			return fmt.Errorf("load cluster %d: %w", clusterID, err)
		}
		owner, err := q.UserGetByID(ctx, c.OwnerID)
		if err != nil {
			return fmt.Errorf("load owner of cluster %d: %w", clusterID, err)
		}
		slices.SortFunc(joins, func(a, b queries.JoinTokenNodeClaimNoticesRow) int { return strings.Compare(a.NodeName, b.NodeName) })
		data := map[string]any{"Cluster": c.Name, "ClusterID": c.ID, "Count": len(joins)}
		template := EmailNodesJoined
		if len(joins) == 1 {
			template = EmailNodeJoined
			data["Node"], data["Token"] = joins[0].NodeName, cmp.Or(joins[0].Description, joins[0].TokenID)
		} else {
			names := make([]string, 0, joinedNamesShown)
			for _, j := range joins[:min(len(joins), joinedNamesShown)] {
				names = append(names, j.NodeName)
			}
			data["Nodes"] = strings.Join(names, ", ")
			if more := len(joins) - len(names); more > 0 {
				data["More"] = more
			}
		}
		_, err = w.Notices.Tell(ctx, tx, owner, notify.JoinTokenUsed, template, data)
		return err
	})
}

// JoinTokenSyncAllArgs asks for a JoinTokenSync job per ready cluster with
// tokens in use. It runs periodically on River's leader.
type JoinTokenSyncAllArgs struct{}

// Kind implements river.JobArgs.
func (JoinTokenSyncAllArgs) Kind() string { return "join_token_sync_all" }

// JoinTokenSyncAllWorker enqueues the per-cluster syncs.
type JoinTokenSyncAllWorker struct {
	river.WorkerDefaults[JoinTokenSyncAllArgs]
	Tokens *jointokens.Service
}

// Work implements river.Worker.
func (w *JoinTokenSyncAllWorker) Work(ctx context.Context, _ *river.Job[JoinTokenSyncAllArgs]) error {
	ids, err := w.Tokens.ClustersToSync(ctx)
	if err != nil {
		return err
	}
	client := river.ClientFromContext[pgx.Tx](ctx)
	for _, id := range ids {
		if _, err := client.Insert(ctx, JoinTokenSyncArgs{ClusterID: id}, nil); err != nil {
			return fmt.Errorf("enqueue join token sync of cluster %d: %w", id, err)
		}
	}
	return nil
}
