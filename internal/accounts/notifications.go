package accounts

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/queries"
)

// Notifications are the user's newest notifications in the platform's
// inbox, up to n.
func (s *Service) Notifications(ctx context.Context, userID int64, n int32) ([]queries.Notification, error) {
	rows, err := queries.New(s.Pool).NotificationListByUser(ctx, queries.NotificationListByUserParams{UserID: userID, RowLimit: n})
	if err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	return rows, nil
}

// MarkNotificationsRead marks every unread notification of the user read
// and returns how many were; marking some is audited
// (notification.read_all), in the same transaction.
func (s *Service) MarkNotificationsRead(ctx context.Context, userID int64, actor audit.Actor) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(_ pgx.Tx, q *queries.Queries) error {
		var err error
		if n, err = q.NotificationMarkAllRead(ctx, userID); err != nil {
			return fmt.Errorf("mark notifications read: %w", err)
		}
		if n == 0 {
			return nil
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "notification.read_all", TargetType: "user", TargetID: fmt.Sprint(userID), Details: map[string]any{"count": n},
		})
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// NotificationPreferences are the user's choice for every kind and
// channel, the defaults where they made none.
func (s *Service) NotificationPreferences(ctx context.Context, userID int64) (Preferences, error) {
	return notify.Matrix(ctx, queries.New(s.Pool), userID)
}
