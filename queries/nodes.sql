-- name: NodeUpsert :exec
-- Records a node as its Node object said at last_seen (now when not
-- given): the health job's snapshot, and the console after acting on the
-- node. A row recorded from a newer read is kept: a health check that
-- listed the nodes just before a cordon does not undo the row the cordon
-- wrote.
INSERT INTO nodes (cluster_id, name, ready, conditions, kubelet_version, addresses, last_seen, not_ready_since,
                   roles, os, arch, unschedulable, node_created_at)
VALUES (@cluster_id, @name, @ready, @conditions, @kubelet_version, @addresses, coalesce(sqlc.narg(last_seen), now()), @not_ready_since,
        coalesce(@roles::text[], '{}'), @os, @arch, @unschedulable, @node_created_at)
ON CONFLICT (cluster_id, name) DO UPDATE SET
    ready = EXCLUDED.ready, conditions = EXCLUDED.conditions,
    kubelet_version = EXCLUDED.kubelet_version, addresses = EXCLUDED.addresses,
    last_seen = EXCLUDED.last_seen, not_ready_since = EXCLUDED.not_ready_since,
    roles = EXCLUDED.roles, os = EXCLUDED.os, arch = EXCLUDED.arch,
    unschedulable = EXCLUDED.unschedulable, node_created_at = EXCLUDED.node_created_at
WHERE nodes.last_seen <= EXCLUDED.last_seen;

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

-- name: NodeListWithTokenByCluster :many
-- A cluster's recorded nodes with the columns its node list shows, each
-- with the join token it joined with (the latest, if it joined twice;
-- empty if none). The tokens are matched in one pass (DISTINCT ON), not
-- looked up per node: that took twice the database's time.
SELECT nodes.name, nodes.status, nodes.unschedulable, nodes.roles, nodes.kubelet_version,
       nodes.os, nodes.arch, nodes.internal_ip, nodes.external_ip, nodes.node_created_at, nodes.last_seen,
       coalesce(jt.token_id, '')::text AS token_id,
       coalesce(jt.description, '')::text AS token_description
FROM nodes
LEFT JOIN (
    SELECT DISTINCT ON (join_token_nodes.node_name)
           join_token_nodes.node_name, join_tokens.token_id, join_tokens.description
    FROM join_token_nodes
    JOIN join_tokens ON join_tokens.id = join_token_nodes.token_id
    WHERE join_tokens.cluster_id = sqlc.arg(cluster_id)
    ORDER BY join_token_nodes.node_name, join_token_nodes.first_seen DESC) jt ON jt.node_name = nodes.name
WHERE nodes.cluster_id = sqlc.arg(cluster_id)
ORDER BY nodes.name;
