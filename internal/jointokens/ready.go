package jointokens

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// ScheduleSync is what happens to a cluster's join tokens when the
// cluster becomes ready (a step of jobs.ClusterReconcileWorker, in the
// transaction tx that marks it ready): its checks.JoinTokenSync comes due now, so
// they are synced from then on (again, after an update: the check goes
// idle while the cluster is not ready, and a sync with nothing to do goes
// idle again).
func ScheduleSync(ctx context.Context, tx pgx.Tx, _ *secrets.Box, c queries.Cluster) error {
	return checks.Schedule(ctx, queries.New(tx), c.ID, checks.JoinTokenSync, time.Now())
}
