-- Managed ingress through the platform edge (issue 13): a cluster's mode,
-- direct (the user's ingress nodes, as before) or edge (the host's shared
-- Gateway, which reaches the tenant's controller pods over the routes the
-- route agents keep on every host node).
ALTER TABLE cluster_ingress
    ADD COLUMN mode TEXT NOT NULL DEFAULT 'direct' CHECK (mode IN ('direct', 'edge'));

-- A node's spec.podCIDR (NULL: none given yet, or not a network).
ALTER TABLE nodes ADD COLUMN pod_cidr CIDR;

-- Each route agent as it last reported (POST /api/v1/edge/routes/status):
-- one row per edge token and host node.
CREATE TABLE route_agents (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_id        BIGINT NOT NULL REFERENCES edge_tokens (id) ON DELETE CASCADE,
    node            TEXT NOT NULL,
    address         TEXT NOT NULL DEFAULT '',
    applied_version TEXT NOT NULL DEFAULT '',
    in_place        INT NOT NULL DEFAULT 0,
    added           INT NOT NULL DEFAULT 0,
    replaced        INT NOT NULL DEFAULT 0,
    removed         INT NOT NULL DEFAULT 0,
    -- The routes it could not apply: {"<dst>": "<why>"}.
    failed          JSONB NOT NULL DEFAULT '{}',
    last_error      TEXT NOT NULL DEFAULT '',
    first_seen_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_seen_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (token_id, node)
);

-- What the route agents route changed: wakes their long polls in every
-- replica when the transaction commits. Nodes change all the time (the
-- health job records them every minute): only a change of what a route is
-- made of, in a cluster routed through the edge, notifies.
CREATE FUNCTION edge_routes_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('kubebyon_routes', '');
    RETURN NULL;
END
$$;

CREATE FUNCTION edge_routes_node_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cid BIGINT := CASE WHEN TG_OP = 'DELETE' THEN OLD.cluster_id ELSE NEW.cluster_id END;
BEGIN
    IF EXISTS (SELECT 1 FROM cluster_ingress WHERE cluster_id = cid AND enabled AND mode = 'edge') THEN
        PERFORM pg_notify('kubebyon_routes', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER nodes_routes_insert_delete AFTER INSERT OR DELETE ON nodes
    FOR EACH ROW EXECUTE FUNCTION edge_routes_node_changed();
CREATE TRIGGER nodes_routes_update AFTER UPDATE ON nodes
    FOR EACH ROW WHEN (
        OLD.pod_cidr IS DISTINCT FROM NEW.pod_cidr
        OR OLD.ready IS DISTINCT FROM NEW.ready
        OR OLD.conditions IS DISTINCT FROM NEW.conditions
        OR OLD.addresses IS DISTINCT FROM NEW.addresses)
    EXECUTE FUNCTION edge_routes_node_changed();
CREATE TRIGGER cluster_ingress_routes AFTER INSERT OR DELETE ON cluster_ingress
    FOR EACH ROW EXECUTE FUNCTION edge_routes_changed();
CREATE TRIGGER cluster_ingress_routes_update AFTER UPDATE ON cluster_ingress
    FOR EACH ROW WHEN (OLD.enabled IS DISTINCT FROM NEW.enabled OR OLD.mode IS DISTINCT FROM NEW.mode)
    EXECUTE FUNCTION edge_routes_changed();
CREATE TRIGGER clusters_routes_update AFTER UPDATE ON clusters
    FOR EACH ROW WHEN (
        (OLD.status = 'deleted') IS DISTINCT FROM (NEW.status = 'deleted')
        OR OLD.pod_cidr IS DISTINCT FROM NEW.pod_cidr)
    EXECUTE FUNCTION edge_routes_changed();

---- create above / drop below ----

DROP TRIGGER clusters_routes_update ON clusters;
DROP TRIGGER cluster_ingress_routes_update ON cluster_ingress;
DROP TRIGGER cluster_ingress_routes ON cluster_ingress;
DROP TRIGGER nodes_routes_update ON nodes;
DROP TRIGGER nodes_routes_insert_delete ON nodes;
DROP FUNCTION edge_routes_node_changed();
DROP FUNCTION edge_routes_changed();
DROP TABLE route_agents;
ALTER TABLE nodes DROP COLUMN pod_cidr;
ALTER TABLE cluster_ingress DROP COLUMN mode;
