-- name: ClusterEventCreate :one
INSERT INTO cluster_events (cluster_id, level, reason, message)
VALUES (@cluster_id, @level, @reason, @message)
RETURNING *;

-- name: ClusterEventListByCluster :many
-- Oldest first; after_id = 0 for all, else only newer events (live updates).
SELECT * FROM cluster_events
WHERE cluster_id = @cluster_id AND id > @after_id
ORDER BY id
LIMIT @row_limit;

-- name: ClusterEventListAfterForMember :many
-- The events of an organization's cluster after after_id, oldest first
-- (the live page's updates); none of another's.
SELECT e.* FROM cluster_events e
JOIN clusters c ON c.id = e.cluster_id
WHERE e.cluster_id = @cluster_id AND c.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))
  AND e.id > @after_id
ORDER BY e.id
LIMIT @row_limit;

-- name: ClusterEventRepeat :exec
-- The event happened again: counted on its row.
UPDATE cluster_events SET count = count + 1, last_seen_at = now() WHERE id = @id;

-- name: ClusterEventLatest :one
SELECT * FROM cluster_events WHERE cluster_id = @cluster_id ORDER BY id DESC LIMIT 1;

-- name: ClusterEventListLatest :many
-- The newest events of an organization's cluster, newest first.
SELECT e.* FROM cluster_events e
JOIN clusters c ON c.id = e.cluster_id
WHERE e.cluster_id = @cluster_id AND c.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))
ORDER BY e.id DESC
LIMIT @row_limit;

-- name: AdminClusterEventListLatest :many
-- Any cluster's newest events, newest first, for the admin's cluster
-- page.
SELECT * FROM cluster_events
WHERE cluster_id = @cluster_id
ORDER BY id DESC
LIMIT @row_limit;

-- name: ClusterEventPageForMember :many
-- A page of the events of an organization's cluster, newest first, below
-- before_id (0: from the newest).
SELECT e.* FROM cluster_events e
JOIN clusters c ON c.id = e.cluster_id
WHERE e.cluster_id = @cluster_id AND c.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[])) AND c.status <> 'deleted'
  AND (@before_id::bigint = 0 OR e.id < @before_id::bigint)
ORDER BY e.id DESC
LIMIT @row_limit;

-- name: ClusterEventReasonsForMember :many
-- The reasons an organization's cluster's events have given, once each:
-- where its provisioning has got to.
SELECT DISTINCT e.reason FROM cluster_events e
JOIN clusters c ON c.id = e.cluster_id
WHERE e.cluster_id = @cluster_id AND c.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[])) AND c.status <> 'deleted';
