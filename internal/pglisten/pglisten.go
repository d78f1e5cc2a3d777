// Package pglisten listens to a PostgreSQL notification channel on a
// connection of its own, again after each failure: what the live feed,
// the state watchers and the session cache each build on.
package pglisten

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RelistenAfter is the wait before listening again after the connection
// failed.
const RelistenAfter = 2 * time.Second

// Run listens on channel until ctx ends, on a connection of its own (not
// one of pool's, which requests need), again RelistenAfter after each
// failure. It calls listening(true) once it listens, and listening(false)
// once it no longer does: whatever was notified meanwhile is lost. Each
// notification's payload goes to notified, in order, one at a time.
func Run(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, channel string, listening func(bool), notified func(payload string)) {
	for {
		err := listen(ctx, pool, channel, listening, notified)
		listening(false)
		if ctx.Err() != nil {
			return
		}
		logger.WarnContext(ctx, "lost the connection listening for notifications; listening again", "channel", channel, "error", err, "after", RelistenAfter)
		select {
		case <-ctx.Done():
			return
		case <-time.After(RelistenAfter):
		}
	}
}

func listen(ctx context.Context, pool *pgxpool.Pool, channel string, listening func(bool), notified func(string)) error {
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	listening(true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		notified(n.Payload)
	}
}
