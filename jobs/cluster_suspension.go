package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubebyon/kubebyon/internal/controlplane"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// suspend scales the control plane of a cluster an admin suspended to 0,
// having kept the replica count it asked for, which resume gives back.
// Run again, it reads 0 and leaves the count it kept.
func (w *ClusterReconcileWorker) suspend(ctx context.Context, q *queries.Queries, c queries.Cluster, h controlplane.Host, logger *slog.Logger) error {
	backend := controlplane.For(c, w.Charts)
	n, err := backend.Replicas(ctx, h, c)
	if apierrors.IsNotFound(err) {
		// Nothing runs that could be scaled down.
		return w.event(ctx, q, c, "info", "Suspended", "")
	}
	if err != nil {
		return fmt.Errorf("suspend cluster %d: %w", c.ID, err)
	}
	if n > 0 {
		// Kept before the scale-down: a job killed between the two finds
		// the count kept and the StatefulSet still to scale.
		if err := q.ClusterSetSuspendedReplicas(ctx, queries.ClusterSetSuspendedReplicasParams{ID: c.ID, Replicas: pgtype.Int4{Int32: n, Valid: true}}); err != nil {
			return fmt.Errorf("keep the replicas of cluster %d: %w", c.ID, err)
		}
		if err := backend.Scale(ctx, h, c, 0); err != nil {
			return fmt.Errorf("suspend cluster %d: %w", c.ID, err)
		}
		logger.Info("cluster suspended", "replicas_before", n)
	}
	return w.event(ctx, q, c, "info", "Suspended", "")
}

// resume scales the control plane of a cluster an admin resumed back to
// the replicas it had before the suspension (1 when they were not read),
// then waits for it as a first install does, by snoozing, and marks the
// cluster ready, which starts its periodic checks again. A control plane
// that does not come back within the ready timeout fails the cluster,
// and the owner's Retry takes it up. Host errors are left to River's
// retries.
func (w *ClusterReconcileWorker) resume(ctx context.Context, q *queries.Queries, c queries.Cluster, rt settings.Runtime, h controlplane.Host, logger *slog.Logger) error {
	backend := controlplane.For(c, w.Charts)
	replicas := int32(1)
	if c.SuspendedReplicas.Valid {
		replicas = c.SuspendedReplicas.Int32
	}
	err := backend.Scale(ctx, h, c, replicas)
	if apierrors.IsNotFound(err) {
		return w.fail(ctx, q, c, "Failed", err)
	}
	if err != nil {
		return fmt.Errorf("resume cluster %d: %w", c.ID, err)
	}
	ready, waiting, err := backend.Status(ctx, h, c)
	if err != nil {
		return fmt.Errorf("resume cluster %d: %w", c.ID, err)
	}
	if !ready {
		if c.ReconcileStartedAt.Valid && time.Since(c.ReconcileStartedAt.Time) > w.ReadyTimeout {
			msg := fmt.Sprintf("the control plane did not come back within %s of the resume (%s)", w.ReadyTimeout, waiting)
			logger.Warn("cluster failed: not back in time after a resume", "timeout", w.ReadyTimeout, "waiting_for", waiting)
			if err := q.ClusterMarkFailed(ctx, queries.ClusterMarkFailedParams{ID: c.ID, StatusMessage: msg}); err != nil {
				return fmt.Errorf("mark failed: %w", err)
			}
			if err := w.noticeFailure(ctx, c, msg); err != nil {
				return err
			}
			return w.event(ctx, q, c, "error", "Failed", msg)
		}
		if err := w.event(ctx, q, c, "info", "WaitingForControlPlane", waiting); err != nil {
			return err
		}
		return river.JobSnooze(w.PollInterval)
	}
	marked, err := w.markReady(ctx, c, rt.PublicEndpoint(c.Slug))
	if err != nil {
		return err
	}
	if !marked {
		return river.JobSnooze(0)
	}
	logger.Info("cluster resumed", "replicas", replicas)
	return nil
}
