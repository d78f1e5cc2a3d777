package metrics

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// ScheduleScrape is what happens to a cluster's metrics when the cluster
// becomes ready (a step of jobs.ClusterReconcileWorker, in the transaction
// tx that marks it ready): its checks.MetricsScrape comes due now, so its control
// plane is scraped from then on (again, after an update: the check goes
// idle while the cluster is not ready).
func ScheduleScrape(ctx context.Context, tx pgx.Tx, _ *secrets.Box, c queries.Cluster) error {
	return checks.Schedule(ctx, queries.New(tx), c.ID, checks.MetricsScrape, time.Now())
}
