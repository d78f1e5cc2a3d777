-- name: NodeUpsert :exec
-- Records a node as its Node object says now: the health job's snapshot,
-- and the console after acting on the node.
INSERT INTO nodes (cluster_id, name, ready, conditions, kubelet_version, addresses, last_seen, not_ready_since,
                   roles, os, arch, unschedulable, node_created_at)
VALUES (@cluster_id, @name, @ready, @conditions, @kubelet_version, @addresses, now(), @not_ready_since,
        coalesce(@roles::text[], '{}'), @os, @arch, @unschedulable, @node_created_at)
ON CONFLICT (cluster_id, name) DO UPDATE SET
    ready = EXCLUDED.ready, conditions = EXCLUDED.conditions,
    kubelet_version = EXCLUDED.kubelet_version, addresses = EXCLUDED.addresses,
    last_seen = EXCLUDED.last_seen, not_ready_since = EXCLUDED.not_ready_since,
    roles = EXCLUDED.roles, os = EXCLUDED.os, arch = EXCLUDED.arch,
    unschedulable = EXCLUDED.unschedulable, node_created_at = EXCLUDED.node_created_at;

-- name: NodeGet :one
SELECT * FROM nodes WHERE cluster_id = @cluster_id AND name = @name;

-- name: NodeDelete :exec
DELETE FROM nodes WHERE cluster_id = @cluster_id AND name = @name;

-- name: NodeDeleteGone :exec
DELETE FROM nodes WHERE cluster_id = @cluster_id AND NOT (name = ANY(@names::text[]));

-- name: NodeListByCluster :many
SELECT * FROM nodes WHERE cluster_id = @cluster_id ORDER BY name;

-- name: NodeClaimAlert :many
-- Claims the nodes NotReady since before @since that were not yet alerted;
-- the claim is atomic, so two health runs never alert one episode twice.
UPDATE nodes SET alerted_at = now()
WHERE cluster_id = @cluster_id AND NOT ready AND not_ready_since < @since AND alerted_at IS NULL
RETURNING *;

-- name: NodeSetAlertNotification :exec
UPDATE nodes SET alert_notification_id = @notification_id
WHERE cluster_id = @cluster_id AND name = @name;

-- name: NodeClaimRecovered :many
-- Claims the alerted nodes that are ready again, with the notification of
-- their episode.
WITH old AS (
    SELECT n.cluster_id, n.name, n.alert_notification_id FROM nodes n
    WHERE n.cluster_id = @cluster_id AND n.ready AND n.alerted_at IS NOT NULL
    FOR UPDATE
)
UPDATE nodes SET alerted_at = NULL, alert_notification_id = NULL
FROM old
WHERE nodes.cluster_id = old.cluster_id AND nodes.name = old.name
RETURNING nodes.name, old.alert_notification_id;
