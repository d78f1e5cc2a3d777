-- Optional per-cluster clean-up: nodes NotReady for longer than this many
-- hours are deleted by the node health job. NULL (the default) is off.
ALTER TABLE clusters ADD COLUMN stale_node_cleanup_hours INT
    CHECK (stale_node_cleanup_hours BETWEEN 1 AND 8760);

---- create above / drop below ----

ALTER TABLE clusters DROP COLUMN stale_node_cleanup_hours;
