-- Plans cap what a user may run. Plans and orders get their own admin pages
-- later; the default plan applies to every user without one.
CREATE TABLE plans (
    id                    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name                  TEXT NOT NULL UNIQUE,
    max_clusters          INT NOT NULL CHECK (max_clusters >= 0),
    max_nodes_per_cluster INT NOT NULL CHECK (max_nodes_per_cluster >= 0),
    price_cents           INT NOT NULL DEFAULT 0,
    is_default            BOOLEAN NOT NULL DEFAULT FALSE,
    created_at            TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX plans_one_default ON plans (is_default) WHERE is_default;

INSERT INTO plans (name, max_clusters, max_nodes_per_cluster, is_default) VALUES ('free', 3, 10, TRUE);

ALTER TABLE users ADD COLUMN plan_id BIGINT REFERENCES plans (id);

-- A virtual cluster: the desired state (spec, generation) that the
-- ClusterReconcile job drives the host cluster toward, and what it observed.
CREATE TABLE clusters (
    id                  BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner_id            BIGINT NOT NULL REFERENCES users (id),
    name                TEXT NOT NULL,
    -- Globally unique: names the host namespace (kubebyon-<slug>) and the
    -- stable API host name (<slug>.<API base domain>).
    slug                TEXT NOT NULL UNIQUE,
    description         TEXT NOT NULL DEFAULT '',
    kubernetes_version  TEXT NOT NULL,
    public_access_mode  TEXT NOT NULL CHECK (public_access_mode IN ('nodeport', 'loadbalancer')),
    -- Allocated by the platform for nodeport mode; unique across clusters.
    node_port           INT UNIQUE,
    generation          BIGINT NOT NULL DEFAULT 1,
    observed_generation BIGINT NOT NULL DEFAULT 0,
    status              TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'provisioning', 'ready', 'updating', 'failed', 'deleting', 'deleted')),
    status_message      TEXT NOT NULL DEFAULT '',
    endpoint            TEXT NOT NULL DEFAULT '',
    delete_requested_at TIMESTAMPTZ,
    -- When the current generation's reconcile began, for its timeout.
    reconcile_started_at TIMESTAMPTZ,
    ready_at            TIMESTAMPTZ,
    deleted_at          TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- A name is unique per user among the clusters that still exist.
CREATE UNIQUE INDEX clusters_owner_name_key ON clusters (owner_id, name) WHERE status <> 'deleted';
CREATE INDEX clusters_owner_idx ON clusters (owner_id, id) WHERE status <> 'deleted';

-- The provisioning steps the console shows live.
CREATE TABLE cluster_events (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    cluster_id BIGINT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    level      TEXT NOT NULL CHECK (level IN ('info', 'warning', 'error')),
    reason     TEXT NOT NULL,
    message    TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX cluster_events_cluster_idx ON cluster_events (cluster_id, id);

---- create above / drop below ----

DROP TABLE cluster_events;
DROP TABLE clusters;
ALTER TABLE users DROP COLUMN plan_id;
DROP TABLE plans;
