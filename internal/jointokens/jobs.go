package jointokens

import (
	"time"

	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
)

// SyncInterval paces the periodic sync of a ready cluster's join tokens
// (checks.JoinTokenSync): every SyncInterval while the cluster has a token
// in use or a joined node not yet registered, idle otherwise. Creating a
// token makes it due.
const SyncInterval = 30 * time.Second

// requestWindow gathers the syncs joins ask for: one per cluster per
// window, started when the window ends, so that it sees every join
// reported in it.
const requestWindow = 2 * time.Second

// SyncArgs asks for one cluster's join tokens to be synced with the CSRs
// and Nodes in its virtual control plane (Service.Sync, worked by
// jobs.JoinTokenSyncWorker): queued when the cluster's check is due, or
// Requested by a join script that reports its join step (RequestSync), so
// that the console learns of the node at once.
type SyncArgs struct {
	ClusterID int64 `json:"cluster_id"`
	Requested bool  `json:"requested,omitempty"`
}

// Kind implements river.JobArgs.
func (SyncArgs) Kind() string { return "join_token_sync" }

// InsertOpts implements river.JobArgsWithInsertOpts: a periodic sync is in
// the checks queue, one per cluster waiting at most; a requested one in
// the clusters queue, apart from the periodic backlog, so that it runs
// soon whatever is queued (RequestSync sets its window).
func (a SyncArgs) InsertOpts() river.InsertOpts {
	if a.Requested {
		return river.InsertOpts{Queue: clusters.Queue, MaxAttempts: 3}
	}
	return river.InsertOpts{Queue: checks.Queue, MaxAttempts: 1, UniqueOpts: checks.UniqueWhileWaiting()}
}

// RequestSync is the sync a join asks for at now: one per cluster per
// window, starting when the window ends. A request never waits behind a
// periodic sync, nor is it dropped as the duplicate of one.
func RequestSync(clusterID int64, now time.Time) (SyncArgs, *river.InsertOpts) {
	end := now.Truncate(requestWindow).Add(requestWindow)
	return SyncArgs{ClusterID: clusterID, Requested: true}, &river.InsertOpts{
		ScheduledAt: end,
		UniqueOpts:  river.UniqueOpts{ByArgs: true, ByPeriod: requestWindow},
	}
}
