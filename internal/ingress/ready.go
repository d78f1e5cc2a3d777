package ingress

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// QueueReconcile is what happens to a cluster's managed ingress when the
// cluster becomes ready (a step of jobs.ClusterReconcileWorker, in the
// transaction tx that marks it ready): when it is on, or not off yet, a
// reconcile is queued (with the River client of the job in ctx), so that
// a recreated control plane gets its controller back. A cluster without
// managed ingress is left alone.
func QueueReconcile(ctx context.Context, tx pgx.Tx, _ *secrets.Box, c queries.Cluster) error {
	if ing, err := queries.New(tx).IngressGet(ctx, c.ID); err == nil && (ing.Enabled || ing.Status != StatusOff) {
		if _, err := river.ClientFromContext[pgx.Tx](ctx).InsertTx(ctx, tx, ReconcileArgs{ClusterID: c.ID}, nil); err != nil {
			return fmt.Errorf("queue managed ingress reconcile: %w", err)
		}
	} else if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("load managed ingress: %w", err)
	}
	return nil
}
