-- The platform switches the node quota on in every ready cluster (issue
-- 14): the daily node_quota_rewrite job switches it on in the ready
-- clusters without it. This index holds only those, so that the job reads
-- them without scanning every cluster; it is empty once all have it.
CREATE INDEX clusters_node_quota_missing_idx ON clusters (id)
    WHERE status = 'ready' AND NOT node_quota_enabled AND delete_requested_at IS NULL;

---- create above / drop below ----

DROP INDEX clusters_node_quota_missing_idx;
