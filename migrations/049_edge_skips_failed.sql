-- The edge routes a cluster from its creation until it is deleted, except
-- one that failed before it was ever ready (issue 35): nothing of it
-- serves, and its name need not be announced. A cluster that failed later
-- (an update, a step timed out) keeps its route: its nodes may still be
-- talking to its control plane. The trigger wakes the edges when a cluster
-- goes in or out of that.
DROP TRIGGER clusters_edge_update ON clusters;
CREATE TRIGGER clusters_edge_update AFTER UPDATE ON clusters
    FOR EACH ROW WHEN (
        OLD.slug IS DISTINCT FROM NEW.slug
        OR (OLD.status <> 'deleted' AND (OLD.status <> 'failed' OR OLD.ready_at IS NOT NULL))
            IS DISTINCT FROM (NEW.status <> 'deleted' AND (NEW.status <> 'failed' OR NEW.ready_at IS NOT NULL))
        OR OLD.public_access_mode IS DISTINCT FROM NEW.public_access_mode
        OR OLD.node_port IS DISTINCT FROM NEW.node_port
        OR OLD.konnectivity_node_port IS DISTINCT FROM NEW.konnectivity_node_port
        OR OLD.lb_address IS DISTINCT FROM NEW.lb_address)
    EXECUTE FUNCTION edge_config_changed();

---- create above / drop below ----

DROP TRIGGER clusters_edge_update ON clusters;
CREATE TRIGGER clusters_edge_update AFTER UPDATE ON clusters
    FOR EACH ROW WHEN (
        OLD.slug IS DISTINCT FROM NEW.slug
        OR (OLD.status = 'deleted') IS DISTINCT FROM (NEW.status = 'deleted')
        OR OLD.public_access_mode IS DISTINCT FROM NEW.public_access_mode
        OR OLD.node_port IS DISTINCT FROM NEW.node_port
        OR OLD.konnectivity_node_port IS DISTINCT FROM NEW.konnectivity_node_port
        OR OLD.lb_address IS DISTINCT FROM NEW.lb_address)
    EXECUTE FUNCTION edge_config_changed();
