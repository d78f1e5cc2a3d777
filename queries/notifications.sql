-- name: NotificationMarkRead :exec
UPDATE notifications SET read_at = now() WHERE id = @id AND user_id = @user_id AND read_at IS NULL;

-- name: NotificationCreate :one
INSERT INTO notifications (user_id, kind, message, params)
VALUES (@user_id, @kind, @message, @params)
RETURNING *;

-- name: NotificationListByUser :many
-- The user's notifications, newest first, paged by id (keyset: ids below
-- @before_id, 0 for the first page).
SELECT * FROM notifications
WHERE user_id = @user_id AND (@before_id::bigint = 0 OR id < @before_id)
ORDER BY id DESC LIMIT @row_limit;

-- name: NotificationCountUnread :one
SELECT count(*) FROM notifications WHERE user_id = @user_id AND read_at IS NULL;

-- name: NotificationMarkAllRead :execrows
UPDATE notifications SET read_at = now() WHERE user_id = @user_id AND read_at IS NULL;

-- name: NotificationMarkReadByIDs :execrows
-- Those of @ids that are the user's and unread; others change nothing.
UPDATE notifications SET read_at = now()
WHERE user_id = @user_id AND id = ANY(@ids::bigint[]) AND read_at IS NULL;

-- name: NotificationMarkReadEvent :exec
-- Marks read notification @id and those that told its event to the other
-- members of the organization: notify.TellCluster writes them in one
-- transaction, so they share its kind, message, parameters and time
-- (now(), the transaction's start).
UPDATE notifications n SET read_at = now()
FROM notifications e
WHERE e.id = @id AND n.read_at IS NULL
  AND n.user_id IN (SELECT m.user_id FROM organization_members m WHERE m.org_id = @org_id)
  AND n.kind = e.kind AND n.message = e.message AND n.params = e.params AND n.created_at = e.created_at;

-- name: NotificationInboxPage :many
-- A page of the user's inbox, newest first, below @before_id (0: from the
-- newest): only unread ones with @unread_only, only those about cluster
-- @cluster_id ('' for any) as their params name it.
SELECT * FROM notifications
WHERE user_id = @user_id AND (@before_id::bigint = 0 OR id < @before_id)
  AND (NOT @unread_only::bool OR read_at IS NULL)
  AND (@cluster_id::text = '' OR params->>'ClusterID' = @cluster_id::text)
ORDER BY id DESC LIMIT @row_limit;

-- name: NotificationClusters :many
-- The clusters the user's notifications are about, the most recently
-- notified first, each with the name its newest notification gives: the
-- inbox's filter.
SELECT (params->>'ClusterID')::bigint AS cluster_id,
       (array_agg(params->>'Cluster' ORDER BY id DESC))[1]::text AS cluster_name
FROM notifications
WHERE user_id = @user_id AND params->>'ClusterID' ~ '^[1-9][0-9]{0,17}$'
GROUP BY 1
ORDER BY max(id) DESC
LIMIT @row_limit;

-- name: NotificationAny :one
SELECT EXISTS (SELECT 1 FROM notifications WHERE user_id = @user_id);
