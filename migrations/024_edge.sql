-- The public entry (package edge): HAProxy on each edge machine, kept in
-- step by `kubebyon edge`, which polls the platform for the routes.

-- The host cluster's nodes as the host_nodes sync last saw them: the edge
-- sends a NodePort cluster's connections to the Ready ones, at the
-- address type the admin picks.
CREATE TABLE host_nodes (
    name        TEXT PRIMARY KEY,
    internal_ip TEXT NOT NULL DEFAULT '',
    external_ip TEXT NOT NULL DEFAULT '',
    ready       BOOLEAN NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- The address the host reports in a LoadBalancer cluster's Service
-- status (an IP address or a DNS name); empty until it has one.
ALTER TABLE clusters ADD COLUMN lb_address TEXT NOT NULL DEFAULT '';

-- Edge tokens, which `kubebyon edge` authenticates with: made by an
-- admin, shown once. Stored like API keys: the prefix ("kbe_" and an id)
-- and a SHA-256 of the whole token.
CREATE TABLE edge_tokens (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL UNIQUE,
    secret_hash  TEXT NOT NULL,
    created_by   BIGINT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_used_at TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ
);

-- Each edge as it last reported (POST /api/v1/edge/status): one row per
-- token and instance name.
CREATE TABLE edge_instances (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_id        BIGINT NOT NULL REFERENCES edge_tokens (id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    address         TEXT NOT NULL DEFAULT '',
    haproxy_version TEXT NOT NULL DEFAULT '',
    applied_version TEXT NOT NULL DEFAULT '',
    -- From HAProxy's show stat: how many backends have every server up,
    -- how many not, and those ([{"cluster_id", "backend", "up", "down"}]).
    backends_up     INT NOT NULL DEFAULT 0,
    backends_down   INT NOT NULL DEFAULT 0,
    down            JSONB NOT NULL DEFAULT '[]',
    last_error      TEXT NOT NULL DEFAULT '',
    first_seen_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_seen_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (token_id, name)
);

-- What the edge routes changed: wakes the edge config API's long polls,
-- in every replica, when the transaction commits (and not before). The
-- notifications of one transaction fold into one.
CREATE FUNCTION edge_config_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('kubebyon_edge', '');
    RETURN NULL;
END
$$;

-- A cluster is routed from its creation until it is deleted.
CREATE TRIGGER clusters_edge_insert_delete AFTER INSERT OR DELETE ON clusters
    FOR EACH ROW EXECUTE FUNCTION edge_config_changed();
CREATE TRIGGER clusters_edge_update AFTER UPDATE ON clusters
    FOR EACH ROW WHEN (
        OLD.slug IS DISTINCT FROM NEW.slug
        OR (OLD.status = 'deleted') IS DISTINCT FROM (NEW.status = 'deleted')
        OR OLD.public_access_mode IS DISTINCT FROM NEW.public_access_mode
        OR OLD.node_port IS DISTINCT FROM NEW.node_port
        OR OLD.konnectivity_node_port IS DISTINCT FROM NEW.konnectivity_node_port
        OR OLD.lb_address IS DISTINCT FROM NEW.lb_address)
    EXECUTE FUNCTION edge_config_changed();
CREATE TRIGGER host_nodes_edge_insert_delete AFTER INSERT OR DELETE ON host_nodes
    FOR EACH ROW EXECUTE FUNCTION edge_config_changed();
CREATE TRIGGER host_nodes_edge_update AFTER UPDATE ON host_nodes
    FOR EACH ROW WHEN (
        OLD.internal_ip IS DISTINCT FROM NEW.internal_ip
        OR OLD.external_ip IS DISTINCT FROM NEW.external_ip
        OR OLD.ready IS DISTINCT FROM NEW.ready)
    EXECUTE FUNCTION edge_config_changed();
-- The runtime settings hold the API base domain and the address type.
CREATE TRIGGER settings_edge AFTER INSERT OR UPDATE OR DELETE ON settings
    FOR EACH ROW EXECUTE FUNCTION edge_config_changed();

---- create above / drop below ----

DROP TRIGGER settings_edge ON settings;
DROP TRIGGER clusters_edge_update ON clusters;
DROP TRIGGER clusters_edge_insert_delete ON clusters;
DROP TABLE edge_instances;
DROP TABLE edge_tokens;
DROP TABLE host_nodes;
DROP FUNCTION edge_config_changed();
ALTER TABLE clusters DROP COLUMN lb_address;
