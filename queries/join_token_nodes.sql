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
-- Records a node's join with a token. A node the health check listed
-- before the join was seen names this token from then on; a join recorded
-- before changes nothing, on either side.
WITH listed AS (
    UPDATE nodes SET join_token_id = @token_id
    FROM join_tokens
    WHERE join_tokens.id = @token_id AND nodes.cluster_id = join_tokens.cluster_id AND nodes.name = @node_name
      AND NOT EXISTS (SELECT 1 FROM join_token_nodes known
                      WHERE known.token_id = @token_id AND known.node_name = @node_name)
)
INSERT INTO join_token_nodes (token_id, node_name, csr_name)
VALUES (@token_id, @node_name, @csr_name)
ON CONFLICT (token_id, node_name) DO NOTHING;

-- name: JoinTokenNodeListByCluster :many
SELECT join_token_nodes.*
FROM join_token_nodes
JOIN join_tokens ON join_tokens.id = join_token_nodes.token_id
WHERE join_tokens.cluster_id = @cluster_id
ORDER BY join_token_nodes.first_seen, join_token_nodes.node_name;

-- name: JoinTokenNodeListByToken :many
SELECT * FROM join_token_nodes WHERE token_id = @token_id ORDER BY first_seen, node_name;

-- name: JoinTokenNodeListByTokens :many
-- The machines that joined with any of the tokens, for a page of them.
SELECT * FROM join_token_nodes WHERE token_id = ANY(@token_ids::bigint[]) ORDER BY first_seen, node_name;

-- name: JoinTokenNodeClaimNotices :many
-- The joins of a cluster its owner has not been told of yet, claimed: a
-- node has joined once it registered its Node, not when its CSR is filed.
UPDATE join_token_nodes SET notified_at = now()
FROM join_tokens
WHERE join_tokens.id = join_token_nodes.token_id AND join_tokens.cluster_id = @cluster_id
  AND join_token_nodes.notified_at IS NULL AND join_token_nodes.registered_at IS NOT NULL
RETURNING join_token_nodes.node_name, join_tokens.token_id, join_tokens.description;
