package accounts

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/queries"
)

// Notifications are the user's newest notifications in the platform's
// inbox with an id below before (0: from the newest), up to n.
func (s *Service) Notifications(ctx context.Context, userID, before int64, n int32) ([]queries.Notification, error) {
	rows, err := queries.New(s.Pool).NotificationListByUser(ctx, queries.NotificationListByUserParams{UserID: userID, BeforeID: before, RowLimit: n})
	if err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	return rows, nil
}

// UnreadNotifications counts the user's unread notifications.
func (s *Service) UnreadNotifications(ctx context.Context, userID int64) (int64, error) {
	n, err := queries.New(s.Pool).NotificationCountUnread(ctx, userID)
	if err != nil {
		return 0, fmt.Errorf("count unread notifications: %w", err)
	}
	return n, nil
}

// MarkNotificationsRead marks every unread notification of the user read
// and returns how many were; marking some is audited
// (notification.read_all), in the same transaction.
func (s *Service) MarkNotificationsRead(ctx context.Context, userID int64, actor audit.Actor) (int64, error) {
	return s.markRead(ctx, userID, actor, "notification.read_all", nil, func(q *queries.Queries) (int64, error) {
		return q.NotificationMarkAllRead(ctx, userID)
	})
}

// MarkSomeNotificationsRead marks those of ids that are the user's and
// unread read, and returns how many were: another user's ids change
// nothing. Marking some is audited (notification.read).
func (s *Service) MarkSomeNotificationsRead(ctx context.Context, userID int64, ids []int64, actor audit.Actor) (int64, error) {
	return s.markRead(ctx, userID, actor, "notification.read", map[string]any{"ids": ids}, func(q *queries.Queries) (int64, error) {
		return q.NotificationMarkReadByIDs(ctx, queries.NotificationMarkReadByIDsParams{UserID: userID, Ids: ids})
	})
}

// markRead marks notifications read with mark and, when it marked some,
// records action with details and their count, in one transaction.
func (s *Service) markRead(ctx context.Context, userID int64, actor audit.Actor, action string, details map[string]any, mark func(*queries.Queries) (int64, error)) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(_ pgx.Tx, q *queries.Queries) error {
		var err error
		if n, err = mark(q); err != nil {
			return fmt.Errorf("mark notifications read: %w", err)
		}
		if n == 0 {
			return nil
		}
		if details == nil {
			details = map[string]any{}
		}
		details["count"] = n
		return audit.Record(ctx, q, actor, audit.Event{
			Action: action, TargetType: "user", TargetID: fmt.Sprint(userID), Details: details,
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

// InboxFilter narrows the inbox: Unread keeps the unread notifications,
// ClusterID (when not 0) those about one cluster; Before pages below a
// notification id (0: from the newest).
type InboxFilter struct {
	Unread    bool
	ClusterID int64
	Before    int64
}

// Inbox is up to n of the user's notifications as f filters them, newest
// first; the filter runs in SQL over all of them.
func (s *Service) Inbox(ctx context.Context, userID int64, f InboxFilter, n int32) ([]queries.Notification, error) {
	cluster := ""
	if f.ClusterID > 0 {
		cluster = strconv.FormatInt(f.ClusterID, 10)
	}
	rows, err := queries.New(s.Pool).NotificationInboxPage(ctx, queries.NotificationInboxPageParams{
		UserID: userID, BeforeID: f.Before, UnreadOnly: f.Unread, ClusterID: cluster, RowLimit: n,
	})
	if err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	return rows, nil
}

// InboxClusters is up to n clusters the user's notifications are about,
// the most recently notified first: the inbox's filter choices.
func (s *Service) InboxClusters(ctx context.Context, userID int64, n int32) ([]queries.NotificationClustersRow, error) {
	rows, err := queries.New(s.Pool).NotificationClusters(ctx, queries.NotificationClustersParams{UserID: userID, RowLimit: n})
	if err != nil {
		return nil, fmt.Errorf("list the clusters of the notifications: %w", err)
	}
	return rows, nil
}

// AnyNotification reports whether the user has any notification at all.
func (s *Service) AnyNotification(ctx context.Context, userID int64) (bool, error) {
	ok, err := queries.New(s.Pool).NotificationAny(ctx, userID)
	if err != nil {
		return false, fmt.Errorf("look for notifications: %w", err)
	}
	return ok, nil
}
