-- name: ClusterSetNodeQuota :one
-- Switches the node quota; a new sealed secret replaces the old one only
-- when given. A cluster being deleted is not changed.
UPDATE clusters SET node_quota_enabled = @enabled,
    node_quota_secret = CASE WHEN @sealed_secret::text <> '' THEN @sealed_secret::text ELSE node_quota_secret END,
    updated_at = now()
WHERE id = @id AND delete_requested_at IS NULL AND status <> 'deleted'
RETURNING *;

-- name: ClusterListNodeQuotaEnabled :many
-- The ready clusters whose node quota is on, whose webhook configurations
-- are written again periodically.
SELECT id FROM clusters
WHERE node_quota_enabled AND status = 'ready' AND delete_requested_at IS NULL
ORDER BY id;
