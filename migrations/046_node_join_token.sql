-- The join token each node joined with (the latest, if it joined twice),
-- kept on the node's row: the nodes page reads it with the node instead
-- of picking the latest of the cluster's join records on every load.
-- Written where either side is recorded: when a join is recorded for a
-- node already listed, and whenever the health check records a node.
-- A join token goes only with its cluster, but the index keeps that
-- delete from scanning the nodes for each token.
ALTER TABLE nodes ADD COLUMN join_token_id BIGINT REFERENCES join_tokens (id) ON DELETE SET NULL;

CREATE INDEX nodes_join_token_idx ON nodes (join_token_id) WHERE join_token_id IS NOT NULL;

UPDATE nodes SET join_token_id = latest.token_id
FROM (
    SELECT DISTINCT ON (join_tokens.cluster_id, join_token_nodes.node_name)
           join_tokens.cluster_id, join_token_nodes.node_name, join_token_nodes.token_id
    FROM join_token_nodes
    JOIN join_tokens ON join_tokens.id = join_token_nodes.token_id
    ORDER BY join_tokens.cluster_id, join_token_nodes.node_name, join_token_nodes.first_seen DESC
) latest
WHERE nodes.cluster_id = latest.cluster_id AND nodes.name = latest.node_name;

---- create above / drop below ----

ALTER TABLE nodes DROP COLUMN join_token_id;
