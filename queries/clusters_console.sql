-- name: ClusterGetForOwnerWithDeleted :one
-- A user's cluster, deleted ones included: a page that watched a cluster
-- go away still finds it, to show the end.
SELECT * FROM clusters WHERE id = @id AND owner_id = @owner_id;

-- name: ClusterEventListLatest :many
-- A cluster's newest events, newest first.
SELECT * FROM cluster_events
WHERE cluster_id = @cluster_id
ORDER BY id DESC
LIMIT @row_limit;
