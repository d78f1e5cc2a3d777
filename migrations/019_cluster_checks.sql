-- Per-cluster periodic work (node health, join token sync, node quota
-- sync) is due per cluster and kind: a dispatcher claims the due rows in
-- batches and queues one small job per cluster, which sets the next due
-- time, backing off while the cluster cannot be reached. NULL due_at: idle
-- until something asks (a new token, the quota switch, the cluster becoming
-- ready).
CREATE TABLE cluster_checks (
    cluster_id BIGINT NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    due_at TIMESTAMPTZ,
    failures INTEGER NOT NULL DEFAULT 0,
    unreachable_since TIMESTAMPTZ,
    last_error TEXT NOT NULL DEFAULT '',
    checked_at TIMESTAMPTZ,
    PRIMARY KEY (cluster_id, kind)
);
CREATE INDEX cluster_checks_due ON cluster_checks (kind, due_at) WHERE due_at IS NOT NULL;

-- What was due before: every ready cluster's health, spread over a
-- minute; the join token syncs and quota re-syncs the periodic jobs did.
INSERT INTO cluster_checks (cluster_id, kind, due_at)
SELECT id, 'node_health', now() + random() * interval '1 minute' FROM clusters WHERE status = 'ready';
INSERT INTO cluster_checks (cluster_id, kind, due_at)
SELECT DISTINCT clusters.id, 'join_token_sync', now()
FROM clusters JOIN join_tokens ON join_tokens.cluster_id = clusters.id
WHERE clusters.status = 'ready' AND join_tokens.revoked_at IS NULL AND join_tokens.used_up_at IS NULL;
INSERT INTO cluster_checks (cluster_id, kind, due_at)
SELECT id, 'node_quota_sync', now() + random() * interval '10 minutes' FROM clusters WHERE node_quota_enabled AND status = 'ready';

-- The periodic jobs that walked every cluster are gone; their queued runs
-- go with them. node_health jobs now name a cluster.
-- (River's tables come after the platform's migrations on a new database.)
DO $$
BEGIN
    IF to_regclass('river_job') IS NOT NULL THEN
        DELETE FROM river_job WHERE kind IN ('join_token_sync_all', 'node_quota_sync_all', 'node_health')
          AND state IN ('available', 'pending', 'retryable', 'scheduled');
    END IF;
END $$;

---- create above / drop below ----

DROP TABLE cluster_checks;
