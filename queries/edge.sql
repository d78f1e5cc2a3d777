-- name: EdgeRoutes :many
-- Every cluster the edge routes (from its creation until it is deleted,
-- but for one that failed before it was ever ready), with only what its
-- route needs.
SELECT id, slug, public_access_mode, node_port, konnectivity_node_port, lb_address
FROM clusters
WHERE status <> 'deleted' AND (status <> 'failed' OR ready_at IS NOT NULL)
ORDER BY id;

-- name: HostNodesReady :many
-- The Ready host nodes, which NodePort clusters' connections go to.
SELECT name, internal_ip, external_ip FROM host_nodes WHERE ready ORDER BY name;

-- name: HostNodeList :many
SELECT * FROM host_nodes ORDER BY name;

-- name: HostNodeUpsert :exec
-- Records a host node as the sync saw it; a row that did not change is
-- left alone (and wakes no edge).
INSERT INTO host_nodes (name, internal_ip, external_ip, ready)
VALUES (@name, @internal_ip, @external_ip, @ready)
ON CONFLICT (name) DO UPDATE
SET internal_ip = EXCLUDED.internal_ip, external_ip = EXCLUDED.external_ip,
    ready = EXCLUDED.ready, updated_at = now()
WHERE (host_nodes.internal_ip, host_nodes.external_ip, host_nodes.ready)
      IS DISTINCT FROM (EXCLUDED.internal_ip, EXCLUDED.external_ip, EXCLUDED.ready);

-- name: HostNodesDeleteExcept :execrows
-- Forgets the host nodes the sync no longer saw.
DELETE FROM host_nodes WHERE NOT (name = ANY (@names::text[]));

-- name: ClusterSetLBAddress :execrows
-- Records the address the host reports for a LoadBalancer cluster's
-- Service; a cluster that is gone is left alone.
UPDATE clusters SET lb_address = @lb_address
WHERE id = @id AND status <> 'deleted' AND lb_address <> @lb_address;

-- name: EdgeTokenCreate :one
-- A prefix already taken (the id part is random) inserts nothing, and the
-- caller tries another.
INSERT INTO edge_tokens (name, prefix, secret_hash, created_by)
VALUES (@name, @prefix, @secret_hash, @created_by)
ON CONFLICT (prefix) DO NOTHING
RETURNING *;

-- name: EdgeTokenList :many
SELECT * FROM edge_tokens ORDER BY id DESC;

-- name: EdgeTokenListPage :many
-- The tokens below @before_id (0: the newest), newest first: a page of
-- the admin API's list.
SELECT * FROM edge_tokens
WHERE @before_id::bigint = 0 OR id < @before_id::bigint
ORDER BY id DESC
LIMIT @row_limit;

-- name: EdgeTokenRevoke :one
UPDATE edge_tokens SET revoked_at = now()
WHERE id = @id AND revoked_at IS NULL
RETURNING *;

-- name: EdgeTokenByPrefix :one
-- The caller checks the hash and revocation.
SELECT * FROM edge_tokens WHERE prefix = @prefix;

-- name: EdgeTokenTouch :exec
UPDATE edge_tokens SET last_used_at = now() WHERE id = @id;

-- name: EdgeInstanceReport :one
-- Records an edge's report; its first report adds it.
INSERT INTO edge_instances (token_id, name, address, haproxy_version, applied_version,
                            backends_up, backends_down, down, last_error)
VALUES (@token_id, @name, @address, @haproxy_version, @applied_version,
        @backends_up, @backends_down, @down, @last_error)
ON CONFLICT (token_id, name) DO UPDATE
SET address = EXCLUDED.address, haproxy_version = EXCLUDED.haproxy_version,
    applied_version = EXCLUDED.applied_version, backends_up = EXCLUDED.backends_up,
    backends_down = EXCLUDED.backends_down, down = EXCLUDED.down,
    last_error = EXCLUDED.last_error, last_seen_at = now()
RETURNING *;

-- name: EdgeInstanceList :many
-- The instances of tokens that still work, and the embedded one (no
-- token), most recently seen first.
SELECT edge_instances.*, coalesce(edge_tokens.name, '')::text AS token_name
FROM edge_instances
LEFT JOIN edge_tokens ON edge_tokens.id = edge_instances.token_id
WHERE edge_instances.token_id IS NULL OR edge_tokens.revoked_at IS NULL
ORDER BY edge_instances.last_seen_at DESC, edge_instances.id;

-- name: EdgeTokenGet :one
SELECT * FROM edge_tokens WHERE id = @id;

-- name: ClusterSetLBAddresses :execrows
-- Records the addresses the host reports for LoadBalancer clusters'
-- Services, by cluster id; only the rows whose address changed are
-- written (and wake the edges).
UPDATE clusters SET lb_address = v.addr
FROM (SELECT unnest(@ids::bigint[]) AS id, unnest(@addrs::text[]) AS addr) AS v
WHERE clusters.id = v.id AND clusters.public_access_mode = 'loadbalancer'
  AND clusters.status <> 'deleted' AND clusters.lb_address <> v.addr;

-- name: EdgeWatchList :many
-- The instances the edge watch looks at: those of tokens that still work,
-- and the embedded one.
SELECT edge_instances.id, edge_instances.name, edge_instances.applied_version, edge_instances.last_seen_at,
    edge_instances.last_error, edge_instances.out_of_step_since, edge_instances.observed_applied, edge_instances.alerted_at
FROM edge_instances
LEFT JOIN edge_tokens ON edge_tokens.id = edge_instances.token_id
WHERE edge_instances.token_id IS NULL OR edge_tokens.revoked_at IS NULL
ORDER BY edge_instances.id
FOR UPDATE OF edge_instances;

-- name: EdgeWatchSave :exec
UPDATE edge_instances
SET out_of_step_since = @out_of_step_since, observed_applied = @observed_applied, alerted_at = @alerted_at
WHERE id = @id;

-- name: UserListActiveAdmins :many
SELECT * FROM users WHERE role = 'admin' AND disabled_at IS NULL ORDER BY id;

-- name: EdgeRoutesDesired :many
-- The routes every route agent should keep: for each cluster whose
-- managed ingress goes through the edge, each Ready node's Pod CIDR via
-- its InternalIP. Only networks that cannot collide: the node's inside its
-- cluster's, which no other live cluster's overlaps.
SELECT n.cluster_id, n.name, n.pod_cidr::cidr AS pod_cidr, n.internal_ip
FROM cluster_ingress ci
JOIN clusters c ON c.id = ci.cluster_id AND c.status <> 'deleted'
JOIN nodes n ON n.cluster_id = ci.cluster_id
WHERE ci.enabled AND ci.mode = 'edge'
  AND n.status = 'Ready' AND n.pod_cidr IS NOT NULL AND n.internal_ip <> ''
  AND n.pod_cidr <<= c.pod_cidr
  AND NOT EXISTS (
      SELECT 1 FROM clusters o WHERE o.id <> c.id AND o.status <> 'deleted' AND o.pod_cidr && c.pod_cidr)
ORDER BY n.cluster_id, n.name;

-- name: RouteAgentRecord :one
-- Records a route agent's report.
INSERT INTO route_agents (token_id, node, address, applied_version, in_place, added, replaced, removed, failed, last_error)
VALUES (@token_id, @node, @address, @applied_version, @in_place, @added, @replaced, @removed, @failed, @last_error)
ON CONFLICT (token_id, node) DO UPDATE SET
    address = EXCLUDED.address, applied_version = EXCLUDED.applied_version,
    in_place = EXCLUDED.in_place, added = EXCLUDED.added, replaced = EXCLUDED.replaced, removed = EXCLUDED.removed,
    failed = EXCLUDED.failed, last_error = EXCLUDED.last_error, last_seen_at = now()
RETURNING *;

-- name: RouteAgentList :many
-- The route agents that reported since @since, by node.
SELECT route_agents.*, edge_tokens.name AS token_name
FROM route_agents JOIN edge_tokens ON edge_tokens.id = route_agents.token_id
WHERE route_agents.last_seen_at >= @since AND edge_tokens.revoked_at IS NULL
ORDER BY route_agents.node, route_agents.id;
