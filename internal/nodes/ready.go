package nodes

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// ScheduleHealthCheck is what happens to a cluster's nodes when the
// cluster becomes ready (a step of jobs.ClusterReconcileWorker, in the
// transaction tx that marks it ready): its checks.NodeHealth comes due now, so
// its nodes are checked from then on (again, after an update: the check
// goes idle while the cluster is not ready).
func ScheduleHealthCheck(ctx context.Context, tx pgx.Tx, _ *secrets.Box, c queries.Cluster) error {
	return checks.Schedule(ctx, queries.New(tx), c.ID, checks.NodeHealth, time.Now())
}
