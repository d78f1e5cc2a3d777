-- name: NotificationMarkRead :exec
UPDATE notifications SET read_at = now() WHERE id = @id AND user_id = @user_id AND read_at IS NULL;

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
