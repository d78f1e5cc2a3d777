package jobs

import (
	"context"
	"log/slog"
	"strings"
)

// riverLog is River's logger at the platform's levels: River writes a
// failed job at info and its steady-state lines (job counts every few
// seconds, maintenance runs) at info too. A job that failed is a warning
// while it will be retried and an error once it will not; the steady
// state is debug, so that a log at info tells changes of state.
type riverLog struct{ slog.Handler }

// riverLevel is the level of a River record.
func riverLevel(r slog.Record) slog.Level {
	switch msg := r.Message; {
	case strings.HasSuffix(msg, ": Job errored; retrying"):
		return slog.LevelWarn
	case strings.HasSuffix(msg, ": Job errored"), strings.HasSuffix(msg, ": Job panicked"):
		return slog.LevelError
	case strings.HasSuffix(msg, ": Producer job counts"), strings.HasSuffix(msg, ": Ran successfully"):
		return slog.LevelDebug
	}
	return r.Level
}

// Enabled implements slog.Handler: River's info may become a warning, and
// any of its lines may be moved down, so every level from debug on is
// looked at (Handle decides).
func (h riverLog) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.Handler.Enabled(ctx, l)
}

// Handle implements slog.Handler.
func (h riverLog) Handle(ctx context.Context, r slog.Record) error {
	r.Level = riverLevel(r)
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h riverLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return riverLog{h.Handler.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h riverLog) WithGroup(name string) slog.Handler {
	return riverLog{h.Handler.WithGroup(name)}
}
