-- The nodes of each ready cluster as the health job last saw them. The
-- virtual cluster is the truth; this snapshot lets the platform notice a
-- node that stays NotReady, and remember whether its owner was told.
CREATE TABLE nodes (
    cluster_id      BIGINT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    ready           BOOLEAN NOT NULL,
    conditions      JSONB NOT NULL DEFAULT '[]',
    kubelet_version TEXT NOT NULL DEFAULT '',
    addresses       JSONB NOT NULL DEFAULT '[]',
    last_seen       TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- When the Ready condition last turned away from True; NULL while ready.
    not_ready_since TIMESTAMPTZ,
    -- The in-app notification of the current NotReady episode: set once
    -- per episode, cleared when the node recovers.
    alert_notification_id BIGINT REFERENCES notifications (id) ON DELETE SET NULL,
    alerted_at      TIMESTAMPTZ,
    PRIMARY KEY (cluster_id, name)
);

-- Drains and deletions of nodes, run by the node_drain job; progress holds
-- the lines the console shows live.
CREATE TABLE node_operations (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    cluster_id BIGINT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    node_name  TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('drain', 'delete')),
    status     TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'succeeded', 'failed')),
    message    TEXT NOT NULL DEFAULT '',
    progress   TEXT[] NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX node_operations_node_idx ON node_operations (cluster_id, node_name, id DESC);

---- create above / drop below ----

DROP TABLE node_operations;
DROP TABLE nodes;
