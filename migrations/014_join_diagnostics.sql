-- Join diagnostics per machine: the join script names the host it runs on
-- (its --node-name, else uname -n), so the owner can tell machines apart
-- that report through one token.
ALTER TABLE join_events ADD COLUMN host TEXT NOT NULL DEFAULT '';

-- When a node recorded from its CSR was first seen as a Node object: a
-- node whose CSR was filed but that never registered is stuck.
ALTER TABLE join_token_nodes ADD COLUMN registered_at TIMESTAMPTZ;

---- create above / drop below ----

ALTER TABLE join_token_nodes DROP COLUMN registered_at;
ALTER TABLE join_events DROP COLUMN host;
