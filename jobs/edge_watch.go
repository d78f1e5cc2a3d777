package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// EdgeWatchInterval is how often the edges are watched.
const EdgeWatchInterval = 30 * time.Second

// EdgeWatchWorker tells the admins about an edge that stays out of step
// with the platform (edge.Watch), and when it is back, as their
// notification preferences say (kind edge_out_of_step).
type EdgeWatchWorker struct {
	river.WorkerDefaults[edge.WatchArgs]
	Pool    *pgxpool.Pool
	Box     *secrets.Box
	Logger  *slog.Logger
	Notices notify.Notices
	// After is how long an edge may be out of step before admins are
	// told; zero means edge.OutOfStepAfter.
	After time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Timeout implements river.Worker.
func (w *EdgeWatchWorker) Timeout(*river.Job[edge.WatchArgs]) time.Duration { return 20 * time.Second }

// Work implements river.Worker: the desired version, the edges and the
// notices in one transaction, so that an edge is told of once.
func (w *EdgeWatchWorker) Work(ctx context.Context, _ *river.Job[edge.WatchArgs]) error {
	now := time.Now()
	if w.Now != nil {
		now = w.Now()
	}
	after := w.After
	if after == 0 {
		after = edge.OutOfStepAfter
	}
	return pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		rt, err := settings.Load(ctx, q, w.Box)
		if err != nil {
			return err
		}
		st, err := edge.Desired(ctx, q, rt)
		if err != nil {
			return err
		}
		alerts, err := edge.Watch(ctx, q, st.Version, now, after)
		if err != nil || len(alerts) == 0 {
			return err
		}
		admins, err := q.UserListActiveAdmins(ctx)
		if err != nil {
			return fmt.Errorf("list admins: %w", err)
		}
		for _, a := range alerts {
			template := notify.EmailEdgeOutOfStep
			if a.Back {
				template = notify.EmailEdgeBackInStep
			}
			w.Logger.WarnContext(ctx, "edge step changed", "edge", a.Edge, "back_in_step", a.Back,
				"silent", a.Silent, "applied", a.Applied, "desired", a.Desired, "last_error", a.LastError)
			data := map[string]any{
				"Edge": a.Edge, "Minutes": a.OutOfStepMinutes, "Silent": a.Silent, "Applied": a.Applied,
				"Desired": a.Desired, "LastError": a.LastError, "LastSeen": a.LastSeen.UTC().Format(time.RFC3339),
			}
			for _, admin := range admins {
				if _, err := w.Notices.Tell(ctx, tx, admin, notify.EdgeOutOfStep, template, data); err != nil {
					return err
				}
			}
			if err := w.Notices.TellPlatform(ctx, tx, notify.EdgeOutOfStep, template, data); err != nil {
				return err
			}
		}
		return nil
	})
}
