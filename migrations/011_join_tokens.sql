-- Join tokens: kubeadm bootstrap tokens the platform creates in a cluster's
-- virtual control plane. The token is looked up by a MAC of its full value
-- and kept sealed with the platform key, so the owner can see the join
-- command again while it is valid.
CREATE TABLE join_tokens (
    id                BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    cluster_id        BIGINT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    -- The bootstrap token id (public part, names the Secret).
    token_id          TEXT NOT NULL,
    token_hash        TEXT NOT NULL UNIQUE,
    sealed_token      TEXT NOT NULL,
    description       TEXT NOT NULL DEFAULT '',
    expires_at        TIMESTAMPTZ,
    -- NULL: unlimited.
    max_uses          INT CHECK (max_uses > 0),
    uses              INT NOT NULL DEFAULT 0,
    revoked_at        TIMESTAMPTZ,
    -- Set once the use limit was reached and the bootstrap Secret deleted.
    used_up_at        TIMESTAMPTZ,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (cluster_id, token_id)
);

CREATE INDEX join_tokens_cluster_idx ON join_tokens (cluster_id, id);

-- The nodes that joined with a token, learned from the CSRs kubelet TLS
-- bootstrap files as system:bootstrap:<token id>.
CREATE TABLE join_token_nodes (
    token_id   BIGINT NOT NULL REFERENCES join_tokens (id) ON DELETE CASCADE,
    node_name  TEXT NOT NULL,
    csr_name   TEXT NOT NULL,
    first_seen TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (token_id, node_name)
);

-- What the join script reported while it ran ("join diagnostics").
CREATE TABLE join_events (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_id   BIGINT NOT NULL REFERENCES join_tokens (id) ON DELETE CASCADE,
    step       TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    message    TEXT NOT NULL DEFAULT '',
    client_ip  TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX join_events_token_idx ON join_events (token_id, id);

---- create above / drop below ----

DROP TABLE join_events;
DROP TABLE join_token_nodes;
DROP TABLE join_tokens;
