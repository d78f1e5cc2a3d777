-- Each cluster's Pod network, fixed when it is created (issue 13): routes
-- to tenants' pods through the platform edge need Pod CIDRs that no two
-- clusters share. pod_cidr_pooled marks a block allocated from the pool
-- the admin sets (settings podCIDRPool and podCIDRBlock); the exclusion
-- constraint makes two live pooled blocks overlapping impossible, even for
-- clusters created at the same instant. Clusters from before (and new ones
-- while no pool is set) have the one network of the settings' podCIDR,
-- shared by all of them, so none of those is unique.
ALTER TABLE clusters
    ADD COLUMN pod_cidr        CIDR NOT NULL DEFAULT '10.244.0.0/16',
    ADD COLUMN pod_cidr_pooled BOOLEAN NOT NULL DEFAULT FALSE;

-- The network existing clusters were installed with: the settings' own,
-- or the default when an admin never set one.
UPDATE clusters SET pod_cidr = coalesce(
    (SELECT nullif(value->>'podCIDR', '') FROM settings WHERE key = 'runtime'), '10.244.0.0/16')::cidr;

ALTER TABLE clusters ADD CONSTRAINT clusters_pod_cidr_pooled_excl
    EXCLUDE USING gist (pod_cidr inet_ops WITH &&) WHERE (pod_cidr_pooled AND status <> 'deleted');

-- For the allocation's and the uniqueness check's overlap lookups.
CREATE INDEX clusters_pod_cidr_idx ON clusters USING gist (pod_cidr inet_ops) WHERE status <> 'deleted';

---- create above / drop below ----

DROP INDEX clusters_pod_cidr_idx;
ALTER TABLE clusters DROP CONSTRAINT clusters_pod_cidr_pooled_excl;
ALTER TABLE clusters DROP COLUMN pod_cidr, DROP COLUMN pod_cidr_pooled;
