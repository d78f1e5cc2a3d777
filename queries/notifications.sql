-- name: NotificationPreferenceList :many
SELECT * FROM notification_preferences WHERE user_id = @user_id;

-- name: NotificationPreferenceGet :one
SELECT enabled FROM notification_preferences
WHERE user_id = @user_id AND kind = @kind AND channel = @channel;

-- name: NotificationPreferenceSet :exec
INSERT INTO notification_preferences (user_id, kind, channel, enabled)
VALUES (@user_id, @kind, @channel, @enabled)
ON CONFLICT (user_id, kind, channel) DO UPDATE SET enabled = EXCLUDED.enabled;

-- name: NotificationCreate :one
INSERT INTO notifications (user_id, kind, message, params)
VALUES (@user_id, @kind, @message, @params)
RETURNING *;

-- name: NotificationListByUser :many
SELECT * FROM notifications WHERE user_id = @user_id ORDER BY id DESC LIMIT @row_limit;

-- name: NotificationCountUnread :one
SELECT count(*) FROM notifications WHERE user_id = @user_id AND read_at IS NULL;

-- name: NotificationMarkAllRead :execrows
UPDATE notifications SET read_at = now() WHERE user_id = @user_id AND read_at IS NULL;
