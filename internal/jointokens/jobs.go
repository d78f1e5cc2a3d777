package jointokens

import (
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/kubebyon/kubebyon/internal/clusters"
)

// SyncInterval is how often the tokens of ready clusters are synced with
// their virtual control planes.
const SyncInterval = 30 * time.Second

// SyncArgs asks for one cluster's join tokens to be synced with the CSRs
// and Nodes in its virtual control plane (Service.Sync, worked by
// jobs.JoinTokenSyncWorker). The periodic SyncAllArgs asks for it, and so
// does a join script that reports its join step, so the console learns of
// the node at once. One waits per cluster at most; a finished one does
// not stop the next.
type SyncArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (SyncArgs) Kind() string { return "join_token_sync" }

// InsertOpts implements river.JobArgsWithInsertOpts. River requires the
// running state among the unique ones: a request that arrives while one
// runs is dropped, and the next periodic run picks its node up.
func (SyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: clusters.Queue, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateScheduled,
	}}}
}

// SyncAllArgs asks for a sync job per ready cluster with tokens in use.
// It runs every SyncInterval on River's leader.
type SyncAllArgs struct{}

// Kind implements river.JobArgs.
func (SyncAllArgs) Kind() string { return "join_token_sync_all" }
