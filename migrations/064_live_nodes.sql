-- The nodes page follows its cluster's stream too (issue 40): a node
-- recorded, changed or gone, and the control plane turning unreachable or
-- answering again, notify kubebyon_cluster with the cluster's id. The
-- health check writes last_seen on every pass: a change of that alone
-- shows nothing new and notifies nobody.
CREATE FUNCTION live_node_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('kubebyon_cluster', OLD.cluster_id::text);
    ELSE
        PERFORM pg_notify('kubebyon_cluster', NEW.cluster_id::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER nodes_live_insert_delete AFTER INSERT OR DELETE ON nodes
    FOR EACH ROW EXECUTE FUNCTION live_node_changed();
CREATE TRIGGER nodes_live_update AFTER UPDATE ON nodes
    FOR EACH ROW WHEN (to_jsonb(OLD) - 'last_seen' IS DISTINCT FROM to_jsonb(NEW) - 'last_seen')
    EXECUTE FUNCTION live_node_changed();
CREATE TRIGGER cluster_checks_live AFTER UPDATE ON cluster_checks
    FOR EACH ROW WHEN (OLD.unreachable_since IS DISTINCT FROM NEW.unreachable_since)
    EXECUTE FUNCTION live_node_changed();

---- create above / drop below ----

DROP TRIGGER cluster_checks_live ON cluster_checks;
DROP TRIGGER nodes_live_update ON nodes;
DROP TRIGGER nodes_live_insert_delete ON nodes;
DROP FUNCTION live_node_changed();
