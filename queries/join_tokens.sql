-- name: JoinTokenCreate :one
INSERT INTO join_tokens (cluster_id, token_id, token_hash, sealed_token, description, expires_at, max_uses)
VALUES (@cluster_id, @token_id, @token_hash, @sealed_token, @description, sqlc.narg('expires_at'), sqlc.narg('max_uses'))
RETURNING *;

-- name: JoinTokenListByCluster :many
-- Newest first; the caller has checked that the cluster is the user's.
SELECT * FROM join_tokens WHERE cluster_id = @cluster_id ORDER BY id DESC;

-- name: JoinTokenGetForOwner :one
SELECT sqlc.embed(join_tokens), sqlc.embed(clusters)
FROM join_tokens
JOIN clusters ON clusters.id = join_tokens.cluster_id
WHERE join_tokens.id = @id AND join_tokens.cluster_id = @cluster_id
  AND clusters.owner_id = @owner_id AND clusters.status <> 'deleted';

-- name: JoinTokenGetByHash :one
SELECT sqlc.embed(join_tokens), sqlc.embed(clusters)
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

-- name: JoinTokenNodeCountAwaiting :one
-- The nodes of a cluster that joined (filed a CSR) within the last day but
-- have not been seen as Node objects yet.
SELECT count(*)
FROM join_token_nodes
JOIN join_tokens ON join_tokens.id = join_token_nodes.token_id
WHERE join_tokens.cluster_id = @cluster_id
  AND join_token_nodes.registered_at IS NULL AND join_token_nodes.first_seen > now() - interval '1 day';

-- name: JoinTokenNodeMarkRegistered :execrows
-- Notes the first time each of these nodes was seen as a Node object.
UPDATE join_token_nodes SET registered_at = now()
FROM join_tokens
WHERE join_tokens.id = join_token_nodes.token_id AND join_tokens.cluster_id = @cluster_id
  AND join_token_nodes.registered_at IS NULL AND join_token_nodes.node_name = ANY(@node_names::text[]);

-- name: JoinTokenNodeRecord :execrows
INSERT INTO join_token_nodes (token_id, node_name, csr_name)
VALUES (@token_id, @node_name, @csr_name)
ON CONFLICT (token_id, node_name) DO NOTHING;

-- name: JoinTokenCountUses :one
-- Uses are the distinct nodes that joined with the token.
UPDATE join_tokens
SET uses = (SELECT count(*) FROM join_token_nodes WHERE join_token_nodes.token_id = join_tokens.id)
WHERE id = @id
RETURNING *;

-- name: JoinTokenMarkUsedUp :exec
UPDATE join_tokens SET used_up_at = now() WHERE id = @id AND used_up_at IS NULL;

-- name: JoinTokenNodeListByCluster :many
SELECT join_token_nodes.*
FROM join_token_nodes
JOIN join_tokens ON join_tokens.id = join_token_nodes.token_id
WHERE join_tokens.cluster_id = @cluster_id
ORDER BY join_token_nodes.first_seen, join_token_nodes.node_name;

-- name: JoinTokenNodeListByToken :many
SELECT * FROM join_token_nodes WHERE token_id = @token_id ORDER BY first_seen, node_name;

-- name: JoinEventCreate :one
INSERT INTO join_events (token_id, step, status, message, client_ip, host)
VALUES (@token_id, @step, @status, @message, @client_ip, @host)
RETURNING *;

-- name: JoinEventListByCluster :many
-- The newest events of each of a cluster's tokens (at most @per_token
-- each), for the diagnostics under each token; newest first.
SELECT e.*
FROM join_tokens t
CROSS JOIN LATERAL (
  SELECT * FROM join_events WHERE join_events.token_id = t.id ORDER BY join_events.id DESC LIMIT @per_token
) e
WHERE t.cluster_id = @cluster_id
ORDER BY e.id DESC;

-- name: JoinEventListByToken :many
-- The newest events of one token, newest first.
SELECT * FROM join_events WHERE token_id = @token_id ORDER BY id DESC LIMIT @row_limit;

-- name: JoinTokenNodeTokensByCluster :many
-- Which token each node of a cluster joined with, for the node list.
SELECT join_token_nodes.node_name, join_tokens.token_id, join_tokens.description
FROM join_token_nodes
JOIN join_tokens ON join_tokens.id = join_token_nodes.token_id
WHERE join_tokens.cluster_id = @cluster_id;

-- name: JoinTokenNodeClaimNotices :many
-- The joins of a cluster its owner has not been told of yet, claimed.
UPDATE join_token_nodes SET notified_at = now()
FROM join_tokens
WHERE join_tokens.id = join_token_nodes.token_id AND join_tokens.cluster_id = @cluster_id
  AND join_token_nodes.notified_at IS NULL
RETURNING join_token_nodes.node_name, join_tokens.token_id, join_tokens.description;
