-- name: IngressGet :one
SELECT * FROM cluster_ingress WHERE cluster_id = @cluster_id;

-- name: IngressSwitch :one
-- Turns a cluster's managed ingress on or off (a new generation for the
-- reconcile job), or leaves it as it is when it already points that way.
-- Only clusters not being deleted: no row otherwise.
INSERT INTO cluster_ingress (cluster_id, enabled, status, started_at)
SELECT c.id, @enabled::boolean, CASE WHEN @enabled::boolean THEN 'installing' ELSE 'off' END, now()
FROM clusters c WHERE c.id = @cluster_id AND c.delete_requested_at IS NULL
ON CONFLICT (cluster_id) DO UPDATE SET
    enabled = EXCLUDED.enabled,
    generation = cluster_ingress.generation + 1,
    status = CASE WHEN EXCLUDED.enabled THEN 'installing' ELSE 'removing' END,
    message = '',
    started_at = now(),
    ready_at = NULL,
    updated_at = now()
WHERE cluster_ingress.enabled <> EXCLUDED.enabled
RETURNING *;

-- name: IngressRetry :one
-- Starts the current direction again after an error: a new generation.
UPDATE cluster_ingress SET
    generation = generation + 1,
    status = CASE WHEN enabled THEN 'installing' ELSE 'removing' END,
    message = '', started_at = now(), updated_at = now()
WHERE cluster_id = @cluster_id AND status = 'error'
RETURNING *;

-- name: IngressTakeLease :execrows
-- One reconcile job at a time per cluster: a job takes the lease when it
-- is free, expired, or already its own.
UPDATE cluster_ingress
SET lease_job = @job_id::bigint, lease_until = now() + make_interval(secs => @seconds::int)
WHERE cluster_id = @cluster_id
  AND (lease_job IS NULL OR lease_job = @job_id::bigint OR lease_until < now());

-- name: IngressReleaseLease :exec
UPDATE cluster_ingress SET lease_job = NULL, lease_until = NULL
WHERE cluster_id = @cluster_id AND lease_job = @job_id::bigint;

-- name: IngressSetStatus :execrows
-- Writes where the reconcile of generation stands; a newer generation
-- (the user switched again meanwhile) is left to its own job. Done sets
-- observed_generation; ready sets ready_at.
UPDATE cluster_ingress SET
    status = @status,
    message = @message,
    controller = CASE WHEN @controller::text = '' THEN controller ELSE @controller::text END,
    chart_version = CASE WHEN @chart_version::text = '' THEN chart_version ELSE @chart_version::text END,
    observed_generation = CASE WHEN @done::boolean THEN generation ELSE observed_generation END,
    ready_at = CASE WHEN @status = 'ready' AND status <> 'ready' THEN now() WHEN @status = 'ready' THEN ready_at END,
    updated_at = now()
WHERE cluster_id = @cluster_id AND generation = @generation;

-- name: IngressStatus :one
-- Where a cluster's managed ingress stands: 'off' when never on.
SELECT coalesce((SELECT status FROM cluster_ingress WHERE cluster_id = @cluster_id), 'off')::text;

-- name: IngressWatchesNodes :one
-- Whether the cluster's CNAME target follows its nodes (managed ingress
-- on): the health job then checks the cluster at the shorter interval.
SELECT EXISTS (SELECT 1 FROM cluster_ingress WHERE cluster_id = @cluster_id AND enabled)::boolean;

-- name: IngressDNSDesired :one
-- The addresses the cluster's CNAME target should have, sorted, each once.
SELECT coalesce(array_agg(DISTINCT address ORDER BY address), '{}')::text[]
FROM ingress_node_addresses WHERE cluster_id = @cluster_id AND address <> '';

-- name: IngressDNSStale :one
-- Whether the cluster's CNAME target is not what its nodes say it should
-- be (managed ingress on, direct, and published addresses other than
-- IngressDNSDesired's): the health job then makes its DNS check due.
SELECT EXISTS (
    SELECT 1 FROM cluster_ingress ci
    WHERE ci.cluster_id = @cluster_id AND ci.enabled AND ci.mode = 'direct'
      AND ci.dns_addresses IS DISTINCT FROM (
        SELECT coalesce(array_agg(DISTINCT address ORDER BY address), '{}')::text[]
        FROM ingress_node_addresses WHERE cluster_id = @cluster_id AND address <> ''))::boolean;

-- name: IngressDNSSave :exec
-- Records what the CNAME target now has.
UPDATE cluster_ingress SET dns_name = @name, dns_addresses = @addresses::text[], dns_state = @state, dns_error = '', updated_at = now()
WHERE cluster_id = @cluster_id;

-- name: IngressDNSSetError :exec
UPDATE cluster_ingress SET dns_state = 'error', dns_error = @error, updated_at = now()
WHERE cluster_id = @cluster_id;

-- name: IngressRefresh :execrows
-- Asks for the controller to be applied again (the ingress nodes were
-- marked for the first time, or unmarked for the last): a new generation,
-- when managed ingress is on.
UPDATE cluster_ingress SET
    generation = generation + 1, status = 'installing', message = '', started_at = now(), updated_at = now()
WHERE cluster_id = @cluster_id AND enabled;

-- name: NodeIngressCount :one
-- How many of the cluster's recorded nodes are marked ingress nodes.
SELECT count(*) FROM nodes WHERE cluster_id = @cluster_id AND ingress;

-- name: IngressSetMode :one
-- Sets the way a cluster's managed ingress is reached (direct, or through
-- the platform edge); a switched-on one gets a new generation for the
-- reconcile job. No row when it is that already, or when the cluster is
-- being deleted.
INSERT INTO cluster_ingress (cluster_id, enabled, mode)
SELECT c.id, FALSE, @mode::text FROM clusters c WHERE c.id = @cluster_id AND c.delete_requested_at IS NULL
ON CONFLICT (cluster_id) DO UPDATE SET
    mode = EXCLUDED.mode,
    generation = cluster_ingress.generation + CASE WHEN cluster_ingress.enabled THEN 1 ELSE 0 END,
    status = CASE WHEN cluster_ingress.enabled THEN 'installing' ELSE cluster_ingress.status END,
    message = CASE WHEN cluster_ingress.enabled THEN '' ELSE cluster_ingress.message END,
    started_at = CASE WHEN cluster_ingress.enabled THEN now() ELSE cluster_ingress.started_at END,
    updated_at = now()
WHERE cluster_ingress.mode <> EXCLUDED.mode
RETURNING *;

-- name: IngressEdgeSave :exec
-- Records where the cluster's routes through the platform edge stand.
UPDATE cluster_ingress SET edge_state = @state, edge_message = @message, edge_pods = @pods::text[],
    edge_gateway = @gateway::text[], updated_at = now()
WHERE cluster_id = @cluster_id;

-- name: IngressEdgeWatched :many
-- The ready clusters routed through the platform edge, with the addresses
-- their EndpointSlices hold, in id order, at most @max of them.
SELECT ci.cluster_id, ci.edge_pods
FROM cluster_ingress ci JOIN clusters c ON c.id = ci.cluster_id
WHERE ci.enabled AND ci.mode = 'edge' AND ci.edge_state <> '' AND c.status = 'ready'
ORDER BY ci.cluster_id
LIMIT @max;
