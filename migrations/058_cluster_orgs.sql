-- Clusters belong to an organization (issue 38), and with them their join
-- tokens, nodes, events, metrics, managed ingress and host names, which
-- hang off the cluster. owner_id stays: it is who made the cluster, shown
-- and recorded, no longer who may see it. Existing clusters land in their
-- maker's personal organization; so does a cluster inserted without one.
ALTER TABLE clusters ADD COLUMN org_id BIGINT REFERENCES organizations (id);

UPDATE clusters c SET org_id = o.id FROM organizations o WHERE o.personal_of = c.owner_id;

ALTER TABLE clusters ALTER COLUMN org_id SET NOT NULL;

CREATE FUNCTION clusters_default_org() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.org_id IS NULL THEN
        SELECT id INTO NEW.org_id FROM organizations WHERE personal_of = NEW.owner_id;
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER clusters_default_org BEFORE INSERT ON clusters
FOR EACH ROW EXECUTE FUNCTION clusters_default_org();

-- Names are unique within an organization, as they were per user.
DROP INDEX clusters_owner_name_key;
DROP INDEX clusters_owner_idx;
CREATE UNIQUE INDEX clusters_org_name_key ON clusters (org_id, name) WHERE status <> 'deleted';
CREATE INDEX clusters_org_idx ON clusters (org_id, id) WHERE status <> 'deleted';
CREATE INDEX clusters_owner_idx ON clusters (owner_id);

-- Whether user usr is a member of organization org in one of roles: what
-- every query of an organization's things asks, with the roles the
-- permission needs (orgs.Acting.Roles). A plain SQL function: the planner
-- inlines it into the query that calls it.
CREATE FUNCTION org_member_in(org BIGINT, usr BIGINT, roles TEXT[]) RETURNS BOOLEAN
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM organization_members m
        WHERE m.org_id = org AND m.user_id = usr AND m.role = ANY (roles)
    )
$$;

-- The plan each organization is on: its maker's personal subscription for
-- a personal organization, the default plan for a team's, until
-- subscriptions move to organizations too. Queries that need the plan of
-- a cluster join it by the cluster's org_id.
CREATE VIEW org_plans AS
SELECT o.id AS org_id, coalesce(s.plan_id, (SELECT id FROM plans WHERE is_default LIMIT 1)) AS plan_id
FROM organizations o
LEFT JOIN subscriptions s ON s.user_id = o.personal_of;

---- create above / drop below ----

DROP VIEW org_plans;
DROP FUNCTION org_member_in(BIGINT, BIGINT, TEXT[]);
DROP INDEX clusters_owner_idx;
DROP INDEX clusters_org_idx;
DROP INDEX clusters_org_name_key;
CREATE UNIQUE INDEX clusters_owner_name_key ON clusters (owner_id, name) WHERE status <> 'deleted';
CREATE INDEX clusters_owner_idx ON clusters (owner_id, id) WHERE status <> 'deleted';
DROP TRIGGER clusters_default_org ON clusters;
DROP FUNCTION clusters_default_org();
ALTER TABLE clusters DROP COLUMN org_id;
