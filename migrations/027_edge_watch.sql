-- The edge watch (periodic job edge_watch) tells admins about an edge that
-- stays out of step: per instance, since when it has been seen behind the
-- desired routes without applying anything new (or silent), the applied
-- version it last saw, and when admins were told (NULL: not told, or told
-- it is back).
ALTER TABLE edge_instances
    ADD COLUMN out_of_step_since TIMESTAMPTZ,
    ADD COLUMN observed_applied  TEXT NOT NULL DEFAULT '',
    ADD COLUMN alerted_at        TIMESTAMPTZ;

---- create above / drop below ----

ALTER TABLE edge_instances
    DROP COLUMN out_of_step_since,
    DROP COLUMN observed_applied,
    DROP COLUMN alerted_at;
