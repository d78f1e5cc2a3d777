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

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/queries"
)

// JoinTokenSyncWorker syncs one cluster's join tokens and tells the owner
// of the nodes that joined.
type JoinTokenSyncWorker struct {
	river.WorkerDefaults[jointokens.SyncArgs]
	Tokens  *jointokens.Service
	Notices notify.Notices
	// Transitions logs the clusters going unreachable and back.
	Transitions *checks.Transitions
}

// joinedNamesShown bounds the node names one notice lists.
const joinedNamesShown = 10

// Timeout implements river.Worker: a few API calls.
func (w *JoinTokenSyncWorker) Timeout(*river.Job[jointokens.SyncArgs]) time.Duration {
	return time.Minute
}

// Work implements river.Worker. It syncs, tells the owner of the joins,
// and paces the cluster's next sync (checks.JoinTokenSync): due again in
// an interval while there is more to sync, idle when there is none,
// backing off while the control plane does not answer.
func (w *JoinTokenSyncWorker) Work(ctx context.Context, job *river.Job[jointokens.SyncArgs]) error {
	id := job.Args.ClusterID
	more, err := w.Tokens.Sync(ctx, id)
	if err == nil {
		err = w.noticeJoins(ctx, id)
	}
	var next time.Time
	if more {
		next = time.Now().Add(jointokens.SyncInterval)
	}
	rec := checks.Recorder{Q: queries.New(w.Tokens.Pool), Log: w.Transitions}
	return rec.Done(ctx, id, checks.JoinTokenSync, jointokens.SyncInterval, next, err)
}

// noticeJoins tells the organization of the joins not told yet, in one notice,
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
		slices.SortFunc(joins, func(a, b queries.JoinTokenNodeClaimNoticesRow) int { return strings.Compare(a.NodeName, b.NodeName) })
		data := map[string]any{"Count": len(joins)}
		template := notify.EmailNodesJoined
		if len(joins) == 1 {
			template = notify.EmailNodeJoined
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
		_, err = w.Notices.TellCluster(ctx, tx, c, notify.JoinTokenUsed, template, data)
		return err
	})
}
