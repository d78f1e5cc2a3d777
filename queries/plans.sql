-- name: PlanForOrg :one
-- The plan of the organization's subscription.
SELECT plans.* FROM plans JOIN subscriptions s ON s.plan_id = plans.id
WHERE s.org_id = @org_id;

-- name: PlanList :many
-- Every plan, archived ones last, in the admin's order.
SELECT * FROM plans ORDER BY archived_at IS NOT NULL, sort_order, id;

-- name: PlanListForMember :many
-- The plans an organization may choose, in the admin's order (archived
-- ones last): the public plans on sale, and its own, whatever it is
-- (archived and hidden plans are for their subscribers alone, who renew
-- them); for a member in one of roles, none for anyone else. A page at a
-- time after the plan after_id (0: from the first); all of them without
-- row_limit.
SELECT p.* FROM plans p
WHERE EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))
  AND ((p.public AND p.archived_at IS NULL) OR p.id = (SELECT s.plan_id FROM subscriptions s WHERE s.org_id = @org_id))
  AND (@after_id::bigint = 0 OR (p.archived_at IS NOT NULL, p.sort_order, p.id) >
       (SELECT a.archived_at IS NOT NULL, a.sort_order, a.id FROM plans a WHERE a.id = @after_id::bigint))
ORDER BY p.archived_at IS NOT NULL, p.sort_order, p.id
LIMIT sqlc.narg('row_limit');

-- name: PlanGet :one
SELECT * FROM plans WHERE id = @id;

-- name: PlanCreate :one
INSERT INTO plans (name, name_zh, description_en, description_zh, max_clusters, max_nodes_per_cluster,
    max_hostnames_per_cluster, ingress_allowed, currency, free, price_monthly, price_yearly, public, sort_order, backends)
VALUES (@name, @name_zh, @description_en, @description_zh, @max_clusters, @max_nodes_per_cluster,
    @max_hostnames_per_cluster, @ingress_allowed, @currency, @free, @price_monthly, @price_yearly, @public, @sort_order,
    coalesce(sqlc.narg('backends')::text[], '{}'))
RETURNING *;

-- name: PlanUpdate :one
-- Changes a plan's fields; the row locked first (PlanLock) by the caller.
UPDATE plans SET name = @name, name_zh = @name_zh, description_en = @description_en, description_zh = @description_zh,
    max_clusters = @max_clusters, max_nodes_per_cluster = @max_nodes_per_cluster,
    max_hostnames_per_cluster = @max_hostnames_per_cluster, ingress_allowed = @ingress_allowed,
    currency = @currency, free = @free, price_monthly = @price_monthly, price_yearly = @price_yearly,
    public = @public, sort_order = @sort_order, backends = coalesce(sqlc.narg('backends')::text[], backends), updated_at = now()
WHERE id = @id
RETURNING *;

-- name: PlanLock :one
SELECT * FROM plans WHERE id = @id FOR UPDATE;

-- name: PlanSetArchived :one
-- Archives a plan (or brings it back); the default plan stays (the
-- constraint plans_default_not_archived refuses it).
UPDATE plans SET archived_at = CASE WHEN @archived::boolean THEN coalesce(archived_at, now()) END, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: PlanClearDefault :exec
UPDATE plans SET is_default = FALSE, updated_at = now() WHERE is_default AND id <> @id;

-- name: PlanMakeDefault :one
UPDATE plans SET is_default = TRUE, updated_at = now() WHERE id = @id AND archived_at IS NULL RETURNING *;

-- name: PlanOrgsOverLimits :one
-- How many of the plan's subscribers (organizations) use more than its
-- limits: more live clusters than it allows, or a cluster with more
-- recorded nodes than it allows.
WITH subscribers AS (
    SELECT s.org_id AS id FROM subscriptions s WHERE s.plan_id = @id
), usage AS (
    SELECT m.id,
           (SELECT count(*) FROM clusters c WHERE c.org_id = m.id AND c.status <> 'deleted') AS clusters,
           (SELECT coalesce(max(n.cnt), 0) FROM (
                SELECT count(*) AS cnt FROM nodes JOIN clusters c ON c.id = nodes.cluster_id
                WHERE c.org_id = m.id AND c.status <> 'deleted' GROUP BY nodes.cluster_id) n) AS nodes
    FROM subscribers m
)
SELECT count(*) FILTER (WHERE usage.clusters > p.max_clusters OR usage.nodes > p.max_nodes_per_cluster)::bigint AS over
FROM usage, plans p WHERE p.id = @id;

-- name: BillingUsage :one
-- What an organization uses of what plans limit: live clusters, and the
-- most recorded nodes and bound host names in any one of them.
SELECT
    (SELECT count(*) FROM clusters c WHERE c.org_id = @org_id AND c.status <> 'deleted')::bigint AS clusters,
    (SELECT coalesce(max(n.cnt), 0) FROM (
        SELECT count(*) AS cnt FROM nodes JOIN clusters c ON c.id = nodes.cluster_id
        WHERE c.org_id = @org_id AND c.status <> 'deleted' GROUP BY nodes.cluster_id) n)::bigint AS most_nodes,
    (SELECT coalesce(max(h.cnt), 0) FROM (
        SELECT count(*) AS cnt FROM cluster_hostnames JOIN clusters c ON c.id = cluster_hostnames.cluster_id
        WHERE c.org_id = @org_id AND c.status <> 'deleted' AND cluster_hostnames.deleted_at IS NULL
        GROUP BY cluster_hostnames.cluster_id) h)::bigint AS most_hostnames;

-- name: PlanDefault :one
SELECT * FROM plans WHERE is_default;
