-- The nodes page reads the node health job's snapshot instead of asking
-- the cluster on every load, so the snapshot keeps all that the list shows:
-- the node's roles, OS and architecture, whether it is cordoned, and when
-- the Node was created. Rows written before are filled in by the next
-- health check (within a minute).
ALTER TABLE nodes
    ADD COLUMN roles           TEXT[] NOT NULL DEFAULT '{}',
    ADD COLUMN os              TEXT NOT NULL DEFAULT '',
    ADD COLUMN arch            TEXT NOT NULL DEFAULT '',
    ADD COLUMN unschedulable   BOOLEAN NOT NULL DEFAULT false,
    ADD COLUMN node_created_at TIMESTAMPTZ;

---- create above / drop below ----

ALTER TABLE nodes
    DROP COLUMN node_created_at,
    DROP COLUMN unschedulable,
    DROP COLUMN arch,
    DROP COLUMN os,
    DROP COLUMN roles;
