-- Managed workload ingress, per cluster (package ingress): the user's
-- switch and where the platform stands with it. generation counts the
-- switch's changes and the user's retries; a reconcile job that finishes
-- one writes it to observed_generation. status: installing, ready,
-- removing, off (removed, or never on), error (message says why).
-- started_at is when the current install or removal began (a rollout has
-- a deadline from it). One reconcile job at a time per cluster, through
-- the lease.
CREATE TABLE cluster_ingress (
    cluster_id          BIGINT PRIMARY KEY REFERENCES clusters (id) ON DELETE CASCADE,
    enabled             BOOLEAN NOT NULL,
    status              TEXT NOT NULL DEFAULT 'off'
                        CHECK (status IN ('installing', 'ready', 'removing', 'off', 'error')),
    message             TEXT NOT NULL DEFAULT '',
    controller          TEXT NOT NULL DEFAULT '',
    chart_version       TEXT NOT NULL DEFAULT '',
    generation          BIGINT NOT NULL DEFAULT 1,
    observed_generation BIGINT NOT NULL DEFAULT 0,
    started_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    ready_at            TIMESTAMPTZ,
    lease_job           BIGINT,
    lease_until         TIMESTAMPTZ,
    updated_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- The clusters whose ingress is on, for the reconcile that follows a
-- cluster becoming ready again.
CREATE INDEX cluster_ingress_enabled_idx ON cluster_ingress (cluster_id) WHERE enabled;

---- create above / drop below ----

DROP TABLE cluster_ingress;
