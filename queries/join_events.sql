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
