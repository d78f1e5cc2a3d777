-- name: NodeUpsert :exec
-- Records a node as its Node object said at last_seen (now when not
-- given): the health job's snapshot, and the console after acting on the
-- node. A row recorded from a newer read is kept: a health check that
-- listed the nodes just before a cordon does not undo the row the cordon
-- wrote.
-- The join token it joined with is looked up again each time (the latest
-- join recorded under its name in the cluster), so a join recorded while
-- the row was being written is caught up with on the next check.
INSERT INTO nodes (cluster_id, name, ready, conditions, kubelet_version, addresses, last_seen, not_ready_since,
                   roles, os, arch, unschedulable, node_created_at, ingress, public_address, pod_cidr, join_token_id)
VALUES (@cluster_id, @name, @ready, @conditions, @kubelet_version, @addresses, coalesce(sqlc.narg(last_seen), now()), @not_ready_since,
        coalesce(@roles::text[], '{}'), @os, @arch, @unschedulable, @node_created_at, @ingress, @public_address, sqlc.narg(pod_cidr)::cidr,
        (SELECT jtn.token_id FROM join_token_nodes jtn
         JOIN join_tokens jt ON jt.id = jtn.token_id
         WHERE jt.cluster_id = @cluster_id AND jtn.node_name = @name
         ORDER BY jtn.first_seen DESC LIMIT 1))
ON CONFLICT (cluster_id, name) DO UPDATE SET
    join_token_id = EXCLUDED.join_token_id,
    ready = EXCLUDED.ready, conditions = EXCLUDED.conditions,
    kubelet_version = EXCLUDED.kubelet_version, addresses = EXCLUDED.addresses,
    last_seen = EXCLUDED.last_seen, not_ready_since = EXCLUDED.not_ready_since,
    roles = EXCLUDED.roles, os = EXCLUDED.os, arch = EXCLUDED.arch,
    unschedulable = EXCLUDED.unschedulable, node_created_at = EXCLUDED.node_created_at,
    ingress = EXCLUDED.ingress, public_address = EXCLUDED.public_address, pod_cidr = EXCLUDED.pod_cidr
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

-- name: NodePage :one
-- A cluster (deleted ones included) with its owner and the columns its
-- nodes page shows, its check of the kind given (NULL times and no error
-- without one), and its recorded nodes with the columns the list shows,
-- each with the join token it joined with (kept on the node's row: the
-- latest, if it joined twice; empty if none). Read by id alone, so that it
-- can go with the session's query before the user is known
-- (database.Pipeline); nodes.PageLoad shows it to its owner alone.
-- The nodes come as arrays, all in the same order (one pass of one
-- aggregate), by no order in particular: node_texts holds each node's
-- text columns as a row of a two-dimensional array (name, status, roles,
-- kubelet version, OS, architecture, internal IP, external IP, token ID,
-- token description: nodes.pageTextColumns in Go, which reads it flat),
-- the other columns an array each. A row per node, each repeating the
-- cluster, made the query allocate three times what the rest of the
-- request does; an array per text column cost PostgreSQL a sixth more
-- than this, and its decoding more still. A node's roles are joined with
-- commas (a role, a label name, has none). The nodes are read by the
-- cluster id given, not joined to the cluster row (LATERAL): PostgreSQL
-- does a sixth more work that way. The owner's plan (name and nodes per
-- cluster, for the node quota panel) comes along by primary keys rather
-- than in a round trip of its own.
SELECT clusters.id, clusters.owner_id, clusters.name, clusters.description, clusters.kubernetes_version,
       clusters.public_access_mode, clusters.node_port, clusters.konnectivity_node_port,
       clusters.status, clusters.status_message, clusters.endpoint, clusters.generation,
       clusters.observed_generation, clusters.created_at, clusters.ready_at,
       clusters.delete_requested_at, clusters.node_quota_enabled, clusters.stale_node_cleanup_hours,
       cc.checked_at, cc.unreachable_since, coalesce(cc.last_error, '')::text AS last_error,
       n.node_texts, n.unschedulable, n.created, n.last_seen,
       plans.name AS plan_name, plans.name_zh AS plan_name_zh, plans.max_nodes_per_cluster AS plan_max_nodes
FROM clusters
JOIN subscriptions ON subscriptions.user_id = clusters.owner_id
JOIN plans ON plans.id = subscriptions.plan_id
LEFT JOIN cluster_checks cc ON cc.cluster_id = clusters.id AND cc.kind = sqlc.arg(kind)
CROSS JOIN (
    SELECT coalesce(array_agg(ARRAY[
               nodes.name, nodes.status, array_to_string(nodes.roles, ','), nodes.kubelet_version,
               nodes.os, nodes.arch, nodes.internal_ip, nodes.external_ip,
               coalesce(jt.token_id, ''), coalesce(jt.description, '')]), '{}')::text[] AS node_texts,
           coalesce(array_agg(nodes.unschedulable), '{}')::boolean[] AS unschedulable,
           coalesce(array_agg(nodes.node_created_at), '{}')::timestamptz[] AS created,
           coalesce(array_agg(nodes.last_seen), '{}')::timestamptz[] AS last_seen
    FROM nodes
    LEFT JOIN join_tokens jt ON jt.id = nodes.join_token_id
    WHERE nodes.cluster_id = sqlc.arg(id)) n
WHERE clusters.id = sqlc.arg(id);

-- name: NodeNamesOfOwnedCluster :many
-- The nodes recorded for a cluster of owner_id, as its delete page lists
-- them.
SELECT n.name FROM nodes n
JOIN clusters c ON c.id = n.cluster_id
WHERE n.cluster_id = @cluster_id AND c.owner_id = @owner_id
ORDER BY n.name;
