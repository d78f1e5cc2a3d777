-- DNS for the API host names (package dnsrecords): what the platform last
-- published for each cluster, and how it went. The per-cluster check
-- 'dns_record' converges it; a cluster that never had a record has no row.
CREATE TABLE cluster_dns (
    cluster_id BIGINT PRIMARY KEY REFERENCES clusters (id) ON DELETE CASCADE,
    -- The name as published and the mode that wrote it; '' once removed.
    name       TEXT NOT NULL DEFAULT '',
    mode       TEXT NOT NULL DEFAULT '',
    addresses  TEXT[] NOT NULL DEFAULT '{}',
    -- published, removed, error.
    state      TEXT NOT NULL,
    error      TEXT NOT NULL DEFAULT '',
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

---- create above / drop below ----

DROP TABLE cluster_dns;
