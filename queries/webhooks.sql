-- name: WebhookChannelCreate :one
INSERT INTO webhook_channels (user_id, kind, name, url_sealed, url_host, secret_sealed, lang)
VALUES (@user_id, @kind, @name, @url_sealed, @url_host, @secret_sealed, @lang)
RETURNING *;

-- name: WebhookChannelGet :one
SELECT * FROM webhook_channels WHERE id = @id;

-- name: WebhookChannelListByUser :many
SELECT * FROM webhook_channels WHERE user_id = @user_id ORDER BY id;

-- name: WebhookChannelListPlatform :many
SELECT * FROM webhook_channels WHERE user_id IS NULL ORDER BY id;

-- name: WebhookChannelPage :many
-- The channels of a user (or the platform's, @user_id NULL), newest
-- first, paged by id (keyset: ids below @before_id, 0 for the first page).
SELECT * FROM webhook_channels
WHERE user_id IS NOT DISTINCT FROM sqlc.narg(user_id)::bigint AND (@before_id::bigint = 0 OR id < @before_id)
ORDER BY id DESC
LIMIT @row_limit;

-- name: WebhookChannelCountByUser :one
SELECT count(*) FROM webhook_channels WHERE user_id = @user_id;

-- name: WebhookChannelDelete :one
DELETE FROM webhook_channels WHERE id = @id RETURNING *;

-- name: WebhookAttemptCreate :exec
INSERT INTO webhook_attempts (channel_id, event_id, event_kind, attempt, status, response_code, error)
VALUES (@channel_id, @event_id, @event_kind, @attempt, @status, @response_code, @error);

-- name: WebhookAttemptListByChannel :many
SELECT * FROM webhook_attempts WHERE channel_id = @channel_id ORDER BY id DESC LIMIT @row_limit;

-- name: WebhookAttemptListRecent :many
-- Every channel's latest attempts, for the admins, with the channel and
-- its owner (none for the platform's).
SELECT a.id, a.channel_id, a.event_id, a.event_kind, a.attempt, a.status, a.response_code, a.error, a.created_at,
       c.name AS channel_name, c.kind AS channel_kind, COALESCE(u.email, '')::text AS owner_email
FROM webhook_attempts a
JOIN webhook_channels c ON c.id = a.channel_id
LEFT JOIN users u ON u.id = c.user_id
ORDER BY a.id DESC
LIMIT @row_limit;

-- name: WebhookAttemptDeleteOld :execrows
DELETE FROM webhook_attempts WHERE created_at < now() - interval '30 days';
