-- name: ClusterListNodeQuotaMissing :many
-- A batch of the ready clusters whose node quota the platform has not
-- switched on yet (clusters ready before it did so for every cluster),
-- after after_id, locked for the caller's transaction. Read through the
-- partial index clusters_node_quota_missing_idx, which is empty once
-- every ready cluster has its quota.
SELECT * FROM clusters
WHERE status = 'ready' AND NOT node_quota_enabled AND delete_requested_at IS NULL
  AND id > @after_id::bigint
ORDER BY id
LIMIT @row_limit
FOR UPDATE;
