package edge

import (
	"context"
	"errors"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/internal/pgwatch"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// Channel is the PostgreSQL notification channel on which the database
// says that what the edge routes changed (migration 024's triggers).
const Channel = "kubebyon_edge"

// Watcher keeps the edge's desired state for the edge config API's long
// polls.
type Watcher = pgwatch.Watcher[edgewire.State]

// NewWatcher returns a watcher that reads the state from pool.
func NewWatcher(pool *pgxpool.Pool, box *secrets.Box, logger *slog.Logger) *Watcher {
	desired := func(ctx context.Context) (edgewire.State, error) {
		q := queries.New(pool)
		rt, err := settings.Load(ctx, q, box)
		var unreadable *settings.UnreadableError
		if err != nil && !errors.As(err, &unreadable) {
			// Sealed secrets the key cannot open do not matter here.
			return edgewire.State{}, err
		}
		return Desired(ctx, q, rt)
	}
	return pgwatch.New(pool, logger, Channel, desired, func(s edgewire.State) string { return s.Version })
}
