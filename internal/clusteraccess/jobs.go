package clusteraccess

import (
	"time"

	"github.com/riverqueue/river"
)

// RevokeArgs ends one member's own access to one cluster (Revoke): queued
// for each of an organization's clusters, in the transaction that removes
// the member or changes their role, so that no token minted for them
// before outlives the change. A cluster that cannot be reached is tried
// again with River's backoff; one that is gone needs nothing.
type RevokeArgs struct {
	ClusterID int64 `json:"cluster_id"`
	UserID    int64 `json:"user_id"`
}

// Kind implements river.JobArgs.
func (RevokeArgs) Kind() string { return "cluster_access_revoke" }

// InsertOpts implements river.JobArgsWithInsertOpts: per-cluster work, in
// the queue whose concurrency bounds it (checks), tried for about a day
// (River's backoff grows with each attempt).
func (RevokeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: RevokeAttempts}
}

// Queue is checks.Queue, said again: importing internal/checks for its
// name would put every package above organizations a floor higher (a
// test holds the two equal).
const Queue = "checks"

// RevokeAttempts bounds the tries of a revocation.
const RevokeAttempts = 15

// RevokeTimeout bounds one try.
const RevokeTimeout = 30 * time.Second
