package nodequota

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// SwitchOnOrSync is what happens to a cluster's node quota when the
// cluster becomes ready (a step of jobs.ClusterReconcileWorker, in the
// transaction tx that marks it ready, with the River client of the job in
// ctx): the owner's plan limits its nodes from the start, so the platform
// switches the quota on (EnableTx, which queues the webhook's sync), or,
// when it is on already, queues a sync of the webhook configuration, which
// a changed, restored or recreated control plane may have lost (the sync
// skips clusters that are not ready). c must have been read in tx with its
// row locked.
func SwitchOnOrSync(ctx context.Context, tx pgx.Tx, box *secrets.Box, c queries.Cluster) error {
	rc := river.ClientFromContext[pgx.Tx](ctx)
	switched, err := EnableTx(ctx, tx, rc, box, c)
	if err != nil {
		return err
	}
	if !switched && c.NodeQuotaEnabled {
		if _, err := rc.InsertTx(ctx, tx, SyncArgs{ClusterID: c.ID}, nil); err != nil {
			return fmt.Errorf("queue node quota sync: %w", err)
		}
	}
	return nil
}
