-- In nodeport mode the control plane Service exposes konnectivity (8132)
-- besides https. Both NodePorts are allocated by the platform: a port the
-- apiserver picked at random for one cluster could otherwise be the one
-- the platform had handed to the next.
ALTER TABLE clusters ADD COLUMN konnectivity_node_port INT UNIQUE;

-- One reconcile job works a cluster at a time: a lease, so that a job that
-- dies frees the cluster when the lease runs out, and no database
-- connection is held for the length of a job.
ALTER TABLE clusters
    ADD COLUMN reconcile_lease_job BIGINT,
    ADD COLUMN reconcile_lease_until TIMESTAMPTZ;

---- create above / drop below ----

ALTER TABLE clusters DROP COLUMN reconcile_lease_until, DROP COLUMN reconcile_lease_job;
ALTER TABLE clusters DROP COLUMN konnectivity_node_port;
