-- name: OverviewForMember :one
-- The overview page of a member of an organization, in one statement (one
-- round trip, one snapshot): its live clusters by state, the nodes the
-- health job last saw in them, the plan's limits, the state behind the
-- first-run checklist (a join token made, a node joined, a kubeconfig the
-- member downloaded), and as JSON arrays, newest first, at most row_limit
-- of its clusters (with their nodes, all and ready) and of their events
-- (the newest row_limit of each cluster, read backwards on its index, then
-- the newest of those: a cluster's long history is not read).
-- A member in none of roles sees zeros and empty lists, as in the cluster
-- list. The member's unread notifications come with the session.
WITH c AS (
    SELECT id, name, status FROM clusters
    WHERE clusters.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[])) AND status <> 'deleted'
), per_cluster AS (
    SELECT nodes.cluster_id, count(*) AS nodes, count(*) FILTER (WHERE nodes.ready) AS ready
    FROM nodes JOIN c ON c.id = nodes.cluster_id
    GROUP BY nodes.cluster_id
)
SELECT
    cs.clusters::bigint AS clusters,
    cs.ready::bigint AS clusters_ready,
    cs.in_progress::bigint AS clusters_in_progress,
    cs.failed::bigint AS clusters_failed,
    coalesce(ns.nodes, 0)::bigint AS nodes,
    coalesce(ns.ready, 0)::bigint AS nodes_ready,
    coalesce(ns.most, 0)::bigint AS nodes_most_in_a_cluster,
    coalesce(p.max_clusters, 0)::int AS plan_max_clusters,
    coalesce(p.max_nodes_per_cluster, 0)::int AS plan_max_nodes_per_cluster,
    coalesce(p.name, '')::text AS plan_name,
    EXISTS (SELECT 1 FROM join_tokens t JOIN c ON c.id = t.cluster_id) AS has_join_token,
    (coalesce(ns.nodes, 0) > 0 OR EXISTS (SELECT 1 FROM join_token_nodes jn JOIN join_tokens t ON t.id = jn.token_id JOIN c ON c.id = t.cluster_id))::boolean AS has_node,
    EXISTS (
        SELECT 1 FROM audit_events a JOIN c ON a.target_id = c.id::text
        WHERE a.actor_id = @user_id::bigint AND a.action = 'cluster.kubeconfig_download' AND a.target_type = 'cluster'
    ) AS downloaded_kubeconfig,
    coalesce((
        SELECT json_agg(json_build_object('id', r.id, 'name', r.name, 'status', r.status,
                                          'nodes', coalesce(pc.nodes, 0), 'nodes_ready', coalesce(pc.ready, 0)) ORDER BY r.id DESC)
        FROM (SELECT id, name, status FROM c ORDER BY id DESC LIMIT @row_limit) r
        LEFT JOIN per_cluster pc ON pc.cluster_id = r.id
    ), '[]')::json AS recent_clusters,
    coalesce((
        SELECT json_agg(json_build_object('id', r.id, 'cluster_id', r.cluster_id, 'cluster_name', r.cluster_name, 'level', r.level,
                                          'reason', r.reason, 'message', r.message, 'created_at', r.created_at) ORDER BY r.id DESC)
        FROM (SELECT e.id, e.cluster_id, c.name AS cluster_name, e.level, e.reason, e.message, e.created_at
              FROM c CROSS JOIN LATERAL (
                  SELECT * FROM cluster_events WHERE cluster_events.cluster_id = c.id
                  ORDER BY cluster_events.id DESC LIMIT @row_limit
              ) e
              ORDER BY e.id DESC LIMIT @row_limit) r
    ), '[]')::json AS recent_events
FROM (
    SELECT count(*) AS clusters,
           count(*) FILTER (WHERE status = 'ready') AS ready,
           count(*) FILTER (WHERE status IN ('pending', 'provisioning', 'updating', 'deleting', 'resuming')) AS in_progress,
           count(*) FILTER (WHERE status = 'failed') AS failed
    FROM c
) cs
CROSS JOIN (SELECT sum(nodes) AS nodes, sum(ready) AS ready, max(nodes) AS most FROM per_cluster) ns
LEFT JOIN subscriptions s ON s.org_id = @org_id
LEFT JOIN plans p ON p.id = s.plan_id;

-- name: AdminOverviewFigures :one
-- The platform at a glance for the admin overview: accounts, live
-- clusters by state, the nodes the health job last saw, and what the
-- audit log says of the operator's checks (a test email that went out, a
-- DNS check whose latest run passed). Each table's figures are counted in
-- one pass over it (with 100,000 nodes, two passes took 10 ms more).
SELECT
    u.users::bigint AS users,
    u.disabled::bigint AS users_disabled,
    c.live::bigint AS clusters,
    c.ready::bigint AS clusters_ready,
    c.in_progress::bigint AS clusters_in_progress,
    c.failed::bigint AS clusters_failed,
    c.suspended::bigint AS clusters_suspended,
    n.nodes::bigint AS nodes,
    n.ready::bigint AS nodes_ready,
    EXISTS (SELECT 1 FROM audit_events WHERE action = 'admin.mail_test' AND details->>'sent' = 'true') AS mail_tested,
    coalesce((SELECT (details->>'ok')::boolean FROM audit_events WHERE action = 'admin.dns_check' ORDER BY id DESC LIMIT 1), false)::boolean AS dns_checked
FROM (SELECT count(*) AS users, count(*) FILTER (WHERE disabled_at IS NOT NULL) AS disabled FROM users) u
CROSS JOIN (
    SELECT count(*) FILTER (WHERE status <> 'deleted') AS live,
           count(*) FILTER (WHERE status = 'ready') AS ready,
           count(*) FILTER (WHERE status IN ('pending', 'provisioning', 'updating', 'deleting', 'resuming')) AS in_progress,
           count(*) FILTER (WHERE status = 'failed') AS failed,
           count(*) FILTER (WHERE status = 'suspended') AS suspended
    FROM clusters
) c
CROSS JOIN (SELECT count(*) AS nodes, count(*) FILTER (WHERE ready) AS ready FROM nodes) n;
