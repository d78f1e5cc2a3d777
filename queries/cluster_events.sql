-- name: ClusterEventCreate :one
INSERT INTO cluster_events (cluster_id, level, reason, message)
VALUES (@cluster_id, @level, @reason, @message)
RETURNING *;

-- name: ClusterEventListByCluster :many
-- Oldest first; after_id = 0 for all, else only newer events (live updates).
SELECT * FROM cluster_events
WHERE cluster_id = @cluster_id AND id > @after_id
ORDER BY id
LIMIT @row_limit;

-- name: ClusterEventRepeat :exec
-- The event happened again: counted on its row.
UPDATE cluster_events SET count = count + 1, last_seen_at = now() WHERE id = @id;

-- name: ClusterEventLatest :one
SELECT * FROM cluster_events WHERE cluster_id = @cluster_id ORDER BY id DESC LIMIT 1;

-- name: ClusterEventListLatest :many
-- A cluster's newest events, newest first.
SELECT * FROM cluster_events
WHERE cluster_id = @cluster_id
ORDER BY id DESC
LIMIT @row_limit;
