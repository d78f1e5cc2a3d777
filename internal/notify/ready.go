package notify

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// TellClusterReady is what the owner hears when a cluster becomes ready (a
// step of jobs.ClusterReconcileWorker, in the transaction tx that marks it
// ready, once per transition to ready): a ClusterReady notice, as the
// owner's preferences say (TellOwner).
func TellClusterReady(ctx context.Context, tx pgx.Tx, box *secrets.Box, c queries.Cluster) error {
	return Notices{Box: box}.TellOwner(ctx, tx, c, ClusterReady, EmailClusterReady, map[string]any{})
}
