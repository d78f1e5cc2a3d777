-- name: NotificationPreferenceList :many
SELECT * FROM notification_preferences WHERE user_id = @user_id;

-- name: NotificationPreferenceGet :one
SELECT enabled FROM notification_preferences
WHERE user_id = @user_id AND kind = @kind AND channel = @channel;

-- name: NotificationPreferenceSet :exec
INSERT INTO notification_preferences (user_id, kind, channel, enabled)
VALUES (@user_id, @kind, @channel, @enabled)
ON CONFLICT (user_id, kind, channel) DO UPDATE SET enabled = EXCLUDED.enabled;
