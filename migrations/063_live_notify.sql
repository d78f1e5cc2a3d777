-- The console's live pages (issue 40) follow a cluster by server-sent
-- events: each replica LISTENs on kubebyon_cluster (internal/livefeed)
-- and these triggers tell it, with the cluster's id, when what those
-- pages show may have changed. The notification leaves at commit, and
-- PostgreSQL folds identical ones of a transaction into one.
CREATE FUNCTION live_cluster_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('kubebyon_cluster', NEW.cluster_id::text);
    RETURN NULL;
END
$$;

-- clusters has no cluster_id column: its own id.
CREATE FUNCTION live_cluster_row_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('kubebyon_cluster', NEW.id::text);
    RETURN NULL;
END
$$;

-- join_events and join_token_nodes name the token, not the cluster.
CREATE FUNCTION live_join_token_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('kubebyon_cluster', (SELECT cluster_id FROM join_tokens WHERE id = NEW.token_id)::text);
    RETURN NULL;
END
$$;

-- What the cluster page shows of the row: its state, not the
-- bookkeeping columns the workers touch on every pass (updated_at,
-- reconcile_started_at).
CREATE TRIGGER clusters_live AFTER UPDATE ON clusters
    FOR EACH ROW WHEN (
        OLD.status IS DISTINCT FROM NEW.status
        OR OLD.status_message IS DISTINCT FROM NEW.status_message
        OR OLD.endpoint IS DISTINCT FROM NEW.endpoint
        OR OLD.lb_address IS DISTINCT FROM NEW.lb_address
        OR OLD.generation IS DISTINCT FROM NEW.generation
        OR OLD.observed_generation IS DISTINCT FROM NEW.observed_generation
        OR OLD.suspended_at IS DISTINCT FROM NEW.suspended_at)
    EXECUTE FUNCTION live_cluster_row_changed();
-- A new event, or a repeat counted on the newest one.
CREATE TRIGGER cluster_events_live AFTER INSERT OR UPDATE ON cluster_events
    FOR EACH ROW EXECUTE FUNCTION live_cluster_changed();
-- Drain and delete progress.
CREATE TRIGGER node_operations_live AFTER INSERT OR UPDATE ON node_operations
    FOR EACH ROW EXECUTE FUNCTION live_cluster_changed();
-- A token's uses, revocation, end of uses; its joins' diagnostics.
CREATE TRIGGER join_tokens_live AFTER INSERT OR UPDATE ON join_tokens
    FOR EACH ROW EXECUTE FUNCTION live_cluster_changed();
CREATE TRIGGER join_events_live AFTER INSERT ON join_events
    FOR EACH ROW EXECUTE FUNCTION live_join_token_changed();
CREATE TRIGGER join_token_nodes_live AFTER INSERT OR UPDATE ON join_token_nodes
    FOR EACH ROW EXECUTE FUNCTION live_join_token_changed();

---- create above / drop below ----

DROP TRIGGER join_token_nodes_live ON join_token_nodes;
DROP TRIGGER join_events_live ON join_events;
DROP TRIGGER join_tokens_live ON join_tokens;
DROP TRIGGER node_operations_live ON node_operations;
DROP TRIGGER cluster_events_live ON cluster_events;
DROP TRIGGER clusters_live ON clusters;
DROP FUNCTION live_join_token_changed();
DROP FUNCTION live_cluster_row_changed();
DROP FUNCTION live_cluster_changed();
