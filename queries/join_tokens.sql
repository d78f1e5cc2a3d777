-- name: JoinTokenCreate :one
INSERT INTO join_tokens (cluster_id, token_id, token_hash, sealed_token, description, expires_at, max_uses)
VALUES (@cluster_id, @token_id, @token_hash, @sealed_token, @description, sqlc.narg('expires_at'), sqlc.narg('max_uses'))
RETURNING *;

-- name: JoinTokenListByCluster :many
-- Newest first; the caller has checked that the cluster is the user's.
SELECT * FROM join_tokens WHERE cluster_id = @cluster_id ORDER BY id DESC;

-- name: JoinTokenPageByCluster :many
-- A page of a cluster's tokens, newest first, below before_id (0: from
-- the newest); the caller has checked that the cluster is the user's.
SELECT * FROM join_tokens
WHERE cluster_id = @cluster_id AND (@before_id::bigint = 0 OR id < @before_id::bigint)
ORDER BY id DESC
LIMIT @row_limit;

-- name: JoinTokenGetForMember :one
SELECT sqlc.embed(join_tokens), sqlc.embed(clusters)
FROM join_tokens
JOIN clusters ON clusters.id = join_tokens.cluster_id
WHERE join_tokens.id = @id AND join_tokens.cluster_id = @cluster_id
  AND clusters.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[])) AND clusters.status <> 'deleted';

-- name: JoinTokenGetByHash :one
-- A token by its hash with what the join endpoint needs of it and of its
-- cluster: every join reads it, and neither whole row. cluster_nodes are
-- the cluster's recorded nodes, plan_max_nodes what its organization's plan
-- allows per cluster.
SELECT join_tokens.id, join_tokens.cluster_id, join_tokens.expires_at, join_tokens.max_uses,
       join_tokens.uses, join_tokens.revoked_at, join_tokens.used_up_at,
       clusters.status AS cluster_status, clusters.endpoint AS cluster_endpoint,
       clusters.ca_cert AS cluster_ca_cert, clusters.backend AS cluster_backend,
       clusters.kubernetes_version AS cluster_kubernetes_version,
       (SELECT count(*) FROM nodes WHERE nodes.cluster_id = clusters.id)::bigint AS cluster_nodes,
       (SELECT plans.max_nodes_per_cluster FROM subscriptions s JOIN plans ON plans.id = s.plan_id
        WHERE s.org_id = clusters.org_id)::int AS plan_max_nodes
FROM join_tokens
JOIN clusters ON clusters.id = join_tokens.cluster_id
WHERE join_tokens.token_hash = @token_hash;

-- name: JoinTokenRevoke :one
UPDATE join_tokens SET revoked_at = now()
WHERE id = @id AND revoked_at IS NULL
RETURNING *;

-- name: JoinTokenListToSync :many
-- The tokens whose bootstrap Secret may still be in use: not revoked, not
-- used up, and not expired for more than an hour (CSRs filed just before
-- expiry are still counted).
SELECT * FROM join_tokens
WHERE cluster_id = @cluster_id AND revoked_at IS NULL AND used_up_at IS NULL
  AND (expires_at IS NULL OR expires_at > now() - interval '1 hour')
ORDER BY id;

-- name: JoinTokenClustersToSync :many
-- The ready clusters that have tokens to sync, or joined nodes that have
-- not registered yet (for a day after their CSR).
SELECT DISTINCT clusters.id
FROM clusters
JOIN join_tokens ON join_tokens.cluster_id = clusters.id
LEFT JOIN join_token_nodes ON join_token_nodes.token_id = join_tokens.id
  AND join_token_nodes.registered_at IS NULL AND join_token_nodes.first_seen > now() - interval '1 day'
WHERE clusters.status = 'ready'
  AND ((join_tokens.revoked_at IS NULL AND join_tokens.used_up_at IS NULL
        AND (join_tokens.expires_at IS NULL OR join_tokens.expires_at > now() - interval '1 hour'))
       OR join_token_nodes.token_id IS NOT NULL);

-- name: JoinTokenCountUses :one
-- Uses are the distinct nodes that joined with the token and registered
-- their Node: a kubelet whose CSR is still pending has not used it yet.
UPDATE join_tokens
SET uses = (SELECT count(*) FROM join_token_nodes
            WHERE join_token_nodes.token_id = join_tokens.id AND join_token_nodes.registered_at IS NOT NULL)
WHERE id = @id
RETURNING *;

-- name: JoinTokenMarkUsedUp :exec
UPDATE join_tokens SET used_up_at = now() WHERE id = @id AND used_up_at IS NULL;

-- name: JoinTokenListForAdmin :many
-- A cluster's tokens as the admin's cluster page shows them, newest
-- first: never the secret nor its hash. last_used is when a node last
-- joined with the token.
SELECT t.id, t.token_id, t.description, t.created_at, t.expires_at, t.revoked_at, t.used_up_at,
       t.uses, t.max_uses,
       (SELECT max(n.first_seen) FROM join_token_nodes n WHERE n.token_id = t.id)::timestamptz AS last_used
FROM join_tokens t
WHERE t.cluster_id = @cluster_id
ORDER BY t.id DESC;
