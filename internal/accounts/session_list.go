package accounts

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/queries"
)

// ErrSessionNotFound is a session that is not the user's, or has ended.
var ErrSessionNotFound = errors.New("session not found")

// Sessions lists the user's active sessions, the most recently seen first.
func (s *Service) Sessions(ctx context.Context, userID int64) ([]queries.UserSession, error) {
	list, err := queries.New(s.Pool).UserSessionListActiveByUser(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return list, nil
}

// EndUserSession signs out one of the user's own sessions (a browser
// elsewhere), found by id and owner.
func (s *Service) EndUserSession(ctx context.Context, userID int64, sessionID string, actor audit.Actor) error {
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		n, err := q.UserSessionEndForUser(ctx, queries.UserSessionEndForUserParams{ID: sessionID, UserID: userID})
		if err != nil {
			return fmt.Errorf("end session: %w", err)
		}
		if n == 0 {
			return ErrSessionNotFound
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.session_end", TargetType: "user", TargetID: fmt.Sprint(userID)})
	})
}

// EndOtherSessions signs out every session of the user but keep (the
// caller's), and says how many it ended.
func (s *Service) EndOtherSessions(ctx context.Context, userID int64, keep string, actor audit.Actor) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		var err error
		n, err = q.UserSessionEndAllForUser(ctx, queries.UserSessionEndAllForUserParams{UserID: userID, KeepID: keep})
		if err != nil {
			return fmt.Errorf("end other sessions: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.sessions_end_others", TargetType: "user", TargetID: fmt.Sprint(userID), Details: map[string]any{"ended": n}})
	})
	return n, err
}
