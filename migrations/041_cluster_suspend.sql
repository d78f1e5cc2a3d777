-- An admin suspends a ready cluster (its control plane scaled to 0, joins
-- refused) and resumes it. Two statuses, not a flag beside 'ready': every
-- place that works only on ready clusters (join tokens, joins, kubeconfig,
-- node actions, the periodic checks, which go idle for clusters not ready)
-- leaves a suspended one alone without being told. Only a ready cluster is
-- suspended, so the status before it is always 'ready', and resuming goes
-- back through 'resuming' to 'ready' once the control plane answers again.
-- suspended_at and suspended_by say since when and by whom;
-- suspended_replicas is the control plane StatefulSet's replica count
-- before it was scaled to 0, which resuming gives back (NULL until the
-- scale-down job has read it).
ALTER TABLE clusters DROP CONSTRAINT clusters_status_check;
ALTER TABLE clusters ADD CONSTRAINT clusters_status_check
    CHECK (status IN ('pending', 'provisioning', 'ready', 'updating', 'failed', 'deleting', 'deleted', 'suspended', 'resuming'));
ALTER TABLE clusters
    ADD COLUMN suspended_at TIMESTAMPTZ,
    ADD COLUMN suspended_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    ADD COLUMN suspended_replicas INT CHECK (suspended_replicas > 0);

---- create above / drop below ----

UPDATE clusters SET status = 'ready' WHERE status IN ('suspended', 'resuming');
ALTER TABLE clusters DROP COLUMN suspended_replicas, DROP COLUMN suspended_by, DROP COLUMN suspended_at;
ALTER TABLE clusters DROP CONSTRAINT clusters_status_check;
ALTER TABLE clusters ADD CONSTRAINT clusters_status_check
    CHECK (status IN ('pending', 'provisioning', 'ready', 'updating', 'failed', 'deleting', 'deleted'));
