-- name: WebhookChannelCreate :one
INSERT INTO webhook_channels (org_id, user_id, kind, name, url_sealed, url_host, secret_sealed, lang)
VALUES (@org_id, @user_id, @kind, @name, @url_sealed, @url_host, @secret_sealed, @lang)
RETURNING *;

-- name: WebhookChannelGet :one
SELECT * FROM webhook_channels WHERE id = @id;

-- name: WebhookChannelGetPlatform :one
SELECT * FROM webhook_channels WHERE id = @id AND org_id IS NULL;

-- name: WebhookChannelGetForMember :one
-- A channel of the organization, for a member in one of @roles: no row
-- for anyone else.
SELECT * FROM webhook_channels
WHERE id = @id AND org_id = @org_id::bigint AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]));

-- name: WebhookChannelListForMember :many
-- The organization's channels, for a member in one of @roles.
SELECT * FROM webhook_channels
WHERE org_id = @org_id::bigint AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))
ORDER BY id;

-- name: WebhookChannelListPlatform :many
SELECT * FROM webhook_channels WHERE org_id IS NULL ORDER BY id;

-- name: WebhookChannelListPersonal :many
-- The channels a user added in their personal organization: where the
-- user's own events (billing, security, the admins' alerts) go, as they
-- went to the user's own channels before channels were organizations'.
SELECT c.* FROM webhook_channels c
JOIN organizations o ON o.id = c.org_id
WHERE o.personal_of = @user_id::bigint AND c.user_id = @user_id
ORDER BY c.id;

-- name: WebhookChannelListForEvent :many
-- The channels of an organization with what decides whether one gets an
-- event of @kind, the webhook column of the preferences of the member
-- who added it (NULL: no choice made, or the account is gone; the
-- default applies), and the language its messages are worded in: that
-- member's, else the channel's own.
SELECT sqlc.embed(c), p.enabled AS wanted, coalesce(u.language, c.lang)::text AS message_lang
FROM webhook_channels c
LEFT JOIN users u ON u.id = c.user_id
LEFT JOIN notification_preferences p ON p.user_id = c.user_id AND p.kind = @kind AND p.channel = 'webhook'
WHERE c.org_id = @org_id::bigint
ORDER BY c.id;

-- name: WebhookChannelPageForMember :many
-- The organization's channels, for a member in one of @roles, newest
-- first, paged by id (keyset: ids below @before_id, 0 for the first page).
SELECT * FROM webhook_channels
WHERE org_id = @org_id::bigint AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))
  AND (@before_id::bigint = 0 OR id < @before_id)
ORDER BY id DESC
LIMIT @row_limit;

-- name: WebhookChannelPagePlatform :many
-- The platform's channels, as WebhookChannelPageForMember.
SELECT * FROM webhook_channels
WHERE org_id IS NULL AND (@before_id::bigint = 0 OR id < @before_id)
ORDER BY id DESC
LIMIT @row_limit;

-- name: WebhookChannelCountByOrg :one
SELECT count(*) FROM webhook_channels WHERE org_id = @org_id::bigint;

-- name: WebhookChannelLockOrg :exec
-- Serialises channel creation per organization, so the cap holds.
SELECT pg_advisory_xact_lock(hashtextextended('webhook-org', @org_id::bigint));

-- name: WebhookChannelDelete :one
DELETE FROM webhook_channels WHERE id = @id RETURNING *;

-- name: WebhookAttemptCreate :exec
INSERT INTO webhook_attempts (channel_id, event_id, event_kind, attempt, status, response_code, error)
VALUES (@channel_id, @event_id, @event_kind, @attempt, @status, @response_code, @error);

-- name: WebhookAttemptListByChannel :many
SELECT * FROM webhook_attempts WHERE channel_id = @channel_id ORDER BY id DESC LIMIT @row_limit;

-- name: WebhookAttemptListRecent :many
-- Every channel's latest attempts, for the admins, with the channel and
-- whose it is: the address of the user of a personal organization, a
-- team's name, none for the platform's.
SELECT a.id, a.channel_id, a.event_id, a.event_kind, a.attempt, a.status, a.response_code, a.error, a.created_at,
       c.name AS channel_name, c.kind AS channel_kind, COALESCE(p.email, o.name, '')::text AS owner
FROM webhook_attempts a
JOIN webhook_channels c ON c.id = a.channel_id
LEFT JOIN organizations o ON o.id = c.org_id
LEFT JOIN users p ON p.id = o.personal_of
ORDER BY a.id DESC
LIMIT @row_limit;

-- name: WebhookAttemptDeleteOld :execrows
DELETE FROM webhook_attempts WHERE created_at < now() - interval '30 days';
