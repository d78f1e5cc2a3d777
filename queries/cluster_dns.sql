-- name: ClusterDNSTarget :one
-- A cluster as its DNS check needs it: its name's parts, whether it is
-- deleted, and what was last published for it.
SELECT c.slug, c.status,
    coalesce(d.name, '')::text AS published_name,
    coalesce(d.mode, '')::text AS published_mode,
    coalesce(d.addresses, '{}')::text[] AS published_addresses,
    coalesce(d.state, '')::text AS state
FROM clusters c LEFT JOIN cluster_dns d ON d.cluster_id = c.id
WHERE c.id = @cluster_id;

-- name: ClusterDNSSave :exec
INSERT INTO cluster_dns (cluster_id, name, mode, addresses, state, error, updated_at)
VALUES (@cluster_id, @name, @mode, @addresses, @state, @error, now())
ON CONFLICT (cluster_id) DO UPDATE
SET name = EXCLUDED.name, mode = EXCLUDED.mode, addresses = EXCLUDED.addresses,
    state = EXCLUDED.state, error = EXCLUDED.error, updated_at = now();

-- name: ClusterDNSSetError :exec
-- Records a failed check; what was published stays as it was.
INSERT INTO cluster_dns (cluster_id, state, error, updated_at)
VALUES (@cluster_id, 'error', @error, now())
ON CONFLICT (cluster_id) DO UPDATE
SET state = 'error', error = EXCLUDED.error, updated_at = now();

-- name: ClusterDNSGet :one
SELECT * FROM cluster_dns WHERE cluster_id = @cluster_id;

-- name: ClusterDNSScheduleAll :execrows
-- Makes the DNS check of every cluster that is not deleted, or still has
-- a record, due now: after a change of the DNS settings.
INSERT INTO cluster_checks (cluster_id, kind, due_at)
SELECT c.id, @kind, now()
FROM clusters c LEFT JOIN cluster_dns d ON d.cluster_id = c.id
WHERE c.status <> 'deleted' OR coalesce(d.name, '') <> ''
ON CONFLICT (cluster_id, kind) DO UPDATE SET due_at = now();

-- name: EdgeInstancesForCluster :many
-- The edges that reported lately, each with what it says of the cluster's
-- API backend: null when every server of it is up (or it has none yet).
SELECT name, applied_version, last_seen_at,
    coalesce((SELECT e FROM jsonb_array_elements(down) e
              WHERE (e->>'cluster_id')::bigint = @cluster_id::bigint AND e->>'backend' = 'api'
              LIMIT 1), 'null')::jsonb AS api
FROM edge_instances
WHERE last_seen_at > now() - make_interval(secs => @stale_seconds::float8)
ORDER BY name;
