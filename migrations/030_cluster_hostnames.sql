-- Host names bound to a cluster's managed ingress (package ingress). A
-- name is bound to at most one cluster on the platform (the unique index
-- over the live rows). managed: the name is under the apps base domain and
-- the platform writes its CNAME; otherwise the user does, and a check
-- verifies it. state: pending (no record yet), verified, wrong (resolved
-- says where it points instead), error (the check could not tell; error
-- says why). A removed name keeps its row (deleted_at) until its check
-- has taken its CNAME out.
CREATE TABLE cluster_hostnames (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    cluster_id  BIGINT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    managed     BOOLEAN NOT NULL,
    state       TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'verified', 'wrong', 'error')),
    resolved    TEXT NOT NULL DEFAULT '',
    error       TEXT NOT NULL DEFAULT '',
    checked_at  TIMESTAMPTZ,
    verified_at TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    deleted_at  TIMESTAMPTZ
);

CREATE UNIQUE INDEX cluster_hostnames_name_key ON cluster_hostnames (name) WHERE deleted_at IS NULL;
CREATE INDEX cluster_hostnames_cluster_idx ON cluster_hostnames (cluster_id);

---- create above / drop below ----

DROP TABLE cluster_hostnames;
