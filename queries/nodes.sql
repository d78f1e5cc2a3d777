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
-- A cluster of the organization (deleted ones included), for a member in
-- one of roles, with its check of the kind given (NULL times and no error
-- without one) and the organization's plan
-- (for the node quota panel): the nodes page's header; NodePageNodes are
-- its rows.
SELECT sqlc.embed(clusters),
       cc.checked_at, cc.unreachable_since, coalesce(cc.last_error, '')::text AS last_error,
       plans.name AS plan_name, plans.name_zh AS plan_name_zh, plans.max_nodes_per_cluster AS plan_max_nodes
FROM clusters
JOIN subscriptions s ON s.org_id = clusters.org_id
JOIN plans ON plans.id = s.plan_id
LEFT JOIN cluster_checks cc ON cc.cluster_id = clusters.id AND cc.kind = @kind
WHERE clusters.id = @id AND clusters.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]));

-- name: NodePageNodes :many
-- The recorded nodes of an organization's cluster by name, with the columns
-- the nodes page shows, each with the join token it joined with (kept on
-- the node's row: the latest, if it joined twice; empty if none).
SELECT n.name, n.status, n.unschedulable, n.roles, n.kubelet_version, n.os, n.arch,
       n.internal_ip, n.external_ip, n.node_created_at, n.last_seen,
       coalesce(jt.token_id, '')::text AS token_id, coalesce(jt.description, '')::text AS token_description
FROM nodes n
JOIN clusters c ON c.id = n.cluster_id
LEFT JOIN join_tokens jt ON jt.id = n.join_token_id
WHERE n.cluster_id = @cluster_id AND c.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))
ORDER BY n.name;

-- name: NodeNamesOfOwnedCluster :many
-- The nodes recorded for an organization's cluster, as its delete page lists
-- them.
SELECT n.name FROM nodes n
JOIN clusters c ON c.id = n.cluster_id
WHERE n.cluster_id = @cluster_id AND c.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))
ORDER BY n.name;
