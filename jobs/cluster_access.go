package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/internal/clusteraccess"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/queries"
)

// ClusterAccessRevokeWorker ends a member's own access to a cluster
// (clusteraccess.RevokeArgs): the organization removed them or changed
// their role.
type ClusterAccessRevokeWorker struct {
	river.WorkerDefaults[clusteraccess.RevokeArgs]
	Pool          *pgxpool.Pool
	VirtualConfig clusters.VirtualConfigFunc
}

// Timeout implements river.Worker: a few API calls.
func (w *ClusterAccessRevokeWorker) Timeout(*river.Job[clusteraccess.RevokeArgs]) time.Duration {
	return clusteraccess.RevokeTimeout
}

// Work implements river.Worker. A deleted cluster needs nothing; one that
// is not ready or does not answer is an error, tried again later.
func (w *ClusterAccessRevokeWorker) Work(ctx context.Context, job *river.Job[clusteraccess.RevokeArgs]) error {
	id, userID := job.Args.ClusterID, job.Args.UserID
	c, err := queries.New(w.Pool).ClusterGetByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load cluster %d: %w", id, err)
	}
	if c.Status == clusters.StatusDeleted {
		return nil
	}
	rc, err := w.VirtualConfig(ctx, c)
	if err != nil {
		return fmt.Errorf("reach cluster %d: %w", id, err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("client of cluster %d: %w", id, err)
	}
	if err := clusteraccess.Revoke(ctx, client, userID); err != nil {
		return fmt.Errorf("revoke the access of user %d to cluster %d: %w", userID, id, err)
	}
	return nil
}
