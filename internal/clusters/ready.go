package clusters

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// RecordReady is what a cluster's timeline shows when the cluster becomes
// ready (a step of jobs.ClusterReconcileWorker, in the transaction tx that
// marks it ready): a "Ready" event.
func RecordReady(ctx context.Context, tx pgx.Tx, _ *secrets.Box, c queries.Cluster) error {
	return Event(ctx, queries.New(tx), c.ID, "info", "Ready", "")
}
