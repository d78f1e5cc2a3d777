-- A repeated cluster event (the same reason and message as the newest)
-- counts on the existing row, with when it was last seen, as Kubernetes
-- events do (issue 35): a cluster waiting, or failing on each retry, no
-- longer fills its timeline.
ALTER TABLE cluster_events
    ADD COLUMN count INT NOT NULL DEFAULT 1,
    ADD COLUMN last_seen_at TIMESTAMPTZ;

---- create above / drop below ----

ALTER TABLE cluster_events DROP COLUMN count, DROP COLUMN last_seen_at;
