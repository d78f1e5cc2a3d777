-- The clusters whose controller pods the edge pod watch follows (package
-- ingress, PodWatch): switched on, through the edge, and routed. Listed
-- every few seconds by the worker that holds the watch.
CREATE INDEX cluster_ingress_edge_routed_idx ON cluster_ingress (cluster_id)
    WHERE enabled AND mode = 'edge' AND edge_state <> '';

---- create above / drop below ----

DROP INDEX cluster_ingress_edge_routed_idx;
