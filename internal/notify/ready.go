package notify

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// TellClusterReady is what the organization hears when a cluster becomes
// ready (a step of jobs.ClusterReconcileWorker, in the transaction tx that
// marks it ready, once per transition to ready): a ClusterReady notice, to
// the members as their preferences say (TellCluster).
func TellClusterReady(ctx context.Context, tx pgx.Tx, box *secrets.Box, c queries.Cluster) error {
	_, err := Notices{Box: box}.TellCluster(ctx, tx, c, ClusterReady, EmailClusterReady, map[string]any{})
	return err
}
