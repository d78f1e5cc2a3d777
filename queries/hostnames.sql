-- name: HostnameCreate :one
INSERT INTO cluster_hostnames (cluster_id, name, managed) VALUES (@cluster_id, @name, @managed)
RETURNING *;

-- name: HostnameListByCluster :many
-- The cluster's bound host names, by name.
SELECT * FROM cluster_hostnames WHERE cluster_id = @cluster_id AND deleted_at IS NULL ORDER BY name;

-- name: HostnamePageByCluster :many
-- A page of the cluster's bound host names, by name, after the name
-- after ('' from the first).
SELECT * FROM cluster_hostnames
WHERE cluster_id = @cluster_id AND deleted_at IS NULL AND name > @after::text
ORDER BY name
LIMIT @row_limit;

-- name: HostnameListForCheck :many
-- Every row of the cluster's host names, removed ones included, for its
-- check.
SELECT * FROM cluster_hostnames WHERE cluster_id = @cluster_id ORDER BY id;

-- name: HostnameCountByCluster :one
SELECT count(*) FROM cluster_hostnames WHERE cluster_id = @cluster_id AND deleted_at IS NULL;

-- name: HostnameMarkDeleted :one
-- Unbinds a host name of the cluster; its check takes out its CNAME.
UPDATE cluster_hostnames SET deleted_at = now()
WHERE cluster_id = @cluster_id AND name = @name AND deleted_at IS NULL
RETURNING *;

-- name: HostnameMarkAllDeleted :exec
-- Unbinds every host name of a cluster (it is being deleted).
UPDATE cluster_hostnames SET deleted_at = now() WHERE cluster_id = @cluster_id AND deleted_at IS NULL;

-- name: HostnamePurge :exec
DELETE FROM cluster_hostnames WHERE id = @id;

-- name: HostnameLiveElsewhere :one
-- Whether name is bound (live) by a row other than id: a removed row's
-- CNAME is then left to that one.
SELECT EXISTS (SELECT 1 FROM cluster_hostnames WHERE name = @name AND id <> @id AND deleted_at IS NULL)::boolean;

-- name: HostnameSetState :exec
UPDATE cluster_hostnames SET
    state = @state, resolved = @resolved, error = @error, checked_at = now(),
    verified_at = CASE WHEN @state = 'verified' AND state <> 'verified' THEN now() WHEN @state = 'verified' THEN verified_at END
WHERE id = @id;

-- name: ClusterSlugExists :one
-- Whether a cluster (of anyone, deleted ones included) has the slug.
SELECT EXISTS (SELECT 1 FROM clusters WHERE slug = @slug)::boolean;

-- name: HostnameSetCert :exec
UPDATE cluster_hostnames SET cert_state = @cert_state, cert_not_after = @cert_not_after, cert_error = @cert_error
WHERE id = @id;

-- name: HostnameClaimExpiryWarning :execrows
-- Claims telling the owner that the certificate expiring at not_after is
-- close to it: once per expiry (a renewed one is told again when it comes
-- close).
UPDATE cluster_hostnames SET cert_warned_at = now()
WHERE id = sqlc.arg(id) AND (cert_warned_at IS NULL OR cert_warned_at < sqlc.arg(not_after)::timestamptz - make_interval(days => 30));

-- name: HostnameSetEdgeStatus :exec
-- Records what the Gateway's implementation says of a host name's routes.
UPDATE cluster_hostnames SET edge_status = @edge_status
WHERE cluster_id = @cluster_id AND name = @name AND deleted_at IS NULL;
