-- name: ClusterCreate :one
-- Without org_id, the maker's personal organization (clusters_default_org).
INSERT INTO clusters (org_id, owner_id, name, slug, description, kubernetes_version, public_access_mode, node_port, konnectivity_node_port, backend)
VALUES (sqlc.narg('org_id'), @owner_id, @name, @slug, @description, @kubernetes_version, @public_access_mode, sqlc.narg('node_port'), sqlc.narg('konnectivity_node_port'),
    coalesce(sqlc.narg('backend'), 'vcluster'))
RETURNING *;

-- name: ClusterGetByID :one
SELECT * FROM clusters WHERE id = @id;

-- name: ClusterGetForMember :one
-- A cluster of the organization, for a member in one of roles; another
-- organization's id, or a user who is not such a member, finds nothing.
SELECT * FROM clusters WHERE id = @id AND clusters.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[])) AND status <> 'deleted';

-- name: ClusterLockForMember :one
SELECT * FROM clusters WHERE id = @id AND clusters.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[])) AND status <> 'deleted' FOR UPDATE;

-- name: ClusterLock :one
SELECT * FROM clusters WHERE id = @id FOR UPDATE;

-- name: ClusterListForMember :many
-- What the API's cluster list shows of an organization's clusters, keyset-
-- paginated, newest first (not the CA certificate nor the secrets).
SELECT id, name, slug, description, kubernetes_version, public_access_mode, status, status_message,
       endpoint, generation, observed_generation, created_at, ready_at, node_quota_enabled,
       node_port, konnectivity_node_port, lb_address, backend
FROM clusters
WHERE clusters.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[])) AND status <> 'deleted'
  AND (@before_id::bigint = 0 OR id < @before_id::bigint)
ORDER BY id DESC
LIMIT @row_limit;

-- name: ClusterListSummaryForMember :many
-- What the cluster list and the dashboard show of an organization's clusters, keyset-
-- paginated, newest first: not the whole row, whose CA certificate alone is
-- over a kilobyte.
SELECT id, name, status, kubernetes_version, public_access_mode, endpoint, created_at FROM clusters
WHERE clusters.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[])) AND status <> 'deleted'
  AND (@before_id::bigint = 0 OR id < @before_id::bigint)
ORDER BY id DESC
LIMIT @row_limit;

-- name: ClusterListSummaryForMemberSorted :many
-- ClusterListSummaryForMember in the order of the column the reader chose
-- (@sort_key: name, status, version or created; @descending), a page at
-- @row_offset: a sorted list pages by offset, the default order by id
-- (the query above, kept as fast as it was).
SELECT id, name, status, kubernetes_version, public_access_mode, endpoint, created_at FROM clusters
WHERE clusters.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[])) AND status <> 'deleted'
ORDER BY
  CASE WHEN NOT @descending::bool THEN CASE @sort_key::text WHEN 'name' THEN lower(name) WHEN 'status' THEN status WHEN 'version' THEN kubernetes_version END END,
  CASE WHEN @descending::bool THEN CASE @sort_key::text WHEN 'name' THEN lower(name) WHEN 'status' THEN status WHEN 'version' THEN kubernetes_version END END DESC,
  CASE WHEN @sort_key::text = 'created' AND NOT @descending::bool THEN created_at END,
  CASE WHEN @sort_key::text = 'created' AND @descending::bool THEN created_at END DESC,
  id DESC
LIMIT @row_limit OFFSET @row_offset;

-- name: ClusterCountActiveByOrg :one
SELECT count(*) FROM clusters WHERE org_id = @org_id AND status <> 'deleted';

-- name: ClusterNodePortsInUse :many
SELECT node_port::int AS port FROM clusters WHERE node_port IS NOT NULL
UNION ALL
SELECT konnectivity_node_port::int FROM clusters WHERE konnectivity_node_port IS NOT NULL;

-- name: ClusterUpdateSpec :one
-- A change of desired state: the reconcile job picks it up.
UPDATE clusters
SET description = @description, kubernetes_version = @kubernetes_version,
    public_access_mode = @public_access_mode, node_port = sqlc.narg('node_port'),
    konnectivity_node_port = sqlc.narg('konnectivity_node_port'),
    generation = generation + 1,
    status = CASE WHEN status IN ('ready', 'failed') THEN (CASE WHEN observed_generation > 0 THEN 'updating' ELSE 'pending' END) ELSE status END,
    status_message = CASE WHEN status = 'failed' THEN '' ELSE status_message END,
    reconcile_started_at = NULL, updated_at = now(), failure_notified = false
WHERE id = @id
RETURNING *;

-- name: ClusterUpdateDescription :one
-- Description only: nothing in the host cluster changes.
UPDATE clusters SET description = @description, updated_at = now() WHERE id = @id RETURNING *;

-- name: ClusterRequestDelete :one
UPDATE clusters
SET delete_requested_at = coalesce(delete_requested_at, now()), status = 'deleting',
    generation = generation + 1, status_message = '', updated_at = now(), failure_notified = false
WHERE id = @id
RETURNING *;

-- name: ClusterRetry :one
-- A failed cluster gets a fresh attempt at its current generation.
UPDATE clusters
SET status = CASE WHEN delete_requested_at IS NULL THEN 'pending' ELSE 'deleting' END,
    status_message = '', reconcile_started_at = NULL, updated_at = now(), failure_notified = false
WHERE id = @id AND status = 'failed'
RETURNING *;

-- name: ClusterSetStatus :exec
UPDATE clusters SET status = @status, status_message = @status_message, updated_at = now() WHERE id = @id;

-- name: ClusterStartReconcile :exec
-- Records when work on this generation began (once), for the timeout.
UPDATE clusters
SET reconcile_started_at = coalesce(reconcile_started_at, now()), status = @status, status_message = '', updated_at = now()
WHERE id = @id;

-- name: ClusterMarkReady :execrows
UPDATE clusters
SET status = 'ready', status_message = '', endpoint = @endpoint, observed_generation = @generation,
    ready_at = coalesce(ready_at, now()), reconcile_started_at = NULL, updated_at = now(), ca_cert = '',
    failure_notified = false
WHERE id = @id AND generation = @generation;

-- name: ClusterSetCACert :exec
-- Keeps the CA the join script verifies the endpoint with, unless the row
-- changed since it was read (it may have become ready again, with a new
-- CA); the next join then reads the CA again.
UPDATE clusters SET ca_cert = @ca_cert WHERE id = @id AND updated_at = @updated_at AND status = 'ready';

-- name: ClusterMarkFailed :exec
UPDATE clusters SET status = 'failed', status_message = @status_message, updated_at = now() WHERE id = @id;

-- name: ClusterClaimFailureNotice :execrows
-- The first failure since the cluster was last ready, retried or changed
-- claims the owner's notice; later attempts find it claimed.
UPDATE clusters SET failure_notified = true WHERE id = @id AND NOT failure_notified;

-- name: ClusterMarkDeleted :exec
UPDATE clusters
SET status = 'deleted', deleted_at = now(), node_port = NULL, konnectivity_node_port = NULL,
    endpoint = '', status_message = '', updated_at = now()
WHERE id = @id;

-- name: ClusterLockOrg :exec
-- Serialises cluster creation per organization, so the plan cap holds.
SELECT pg_advisory_xact_lock(hashtextextended('cluster-org', @org_id::bigint));

-- name: ClusterTakeReconcileLease :execrows
-- One reconcile job at a time per cluster: a job takes the lease when it is
-- free, expired, or already its own.
UPDATE clusters
SET reconcile_lease_job = @job_id::bigint, reconcile_lease_until = now() + make_interval(secs => @seconds::int)
WHERE id = @cluster_id
  AND (reconcile_lease_job IS NULL OR reconcile_lease_job = @job_id::bigint OR reconcile_lease_until < now());

-- name: ClusterReleaseReconcileLease :exec
UPDATE clusters SET reconcile_lease_job = NULL, reconcile_lease_until = NULL
WHERE id = @cluster_id AND reconcile_lease_job = @job_id::bigint;

-- name: ClusterGetForMemberWithDeleted :one
-- An organization's cluster, deleted ones included: a page that watched a cluster
-- go away still finds it, to show the end.
SELECT * FROM clusters WHERE id = @id AND clusters.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]));

-- name: ClusterSetNodeQuota :one
-- Switches the node quota; a new sealed secret replaces the old one only
-- when given. A cluster being deleted is not changed.
UPDATE clusters SET node_quota_enabled = @enabled,
    node_quota_secret = CASE WHEN @sealed_secret::text <> '' THEN @sealed_secret::text ELSE node_quota_secret END,
    updated_at = now()
WHERE id = @id AND delete_requested_at IS NULL AND status <> 'deleted'
RETURNING *;

-- name: ClusterListNodeQuotaEnabled :many
-- The ready clusters whose node quota is on, whose webhook configurations
-- are written again periodically.
SELECT id FROM clusters
WHERE node_quota_enabled AND status = 'ready' AND delete_requested_at IS NULL
ORDER BY id;

-- name: ClusterListReady :many
SELECT * FROM clusters WHERE status = 'ready' ORDER BY id;

-- name: ClusterSetStaleNodeCleanup :exec
UPDATE clusters SET stale_node_cleanup_hours = sqlc.narg('hours'), updated_at = now() WHERE id = @id;

-- name: ClusterPodCIDRLock :exec
-- Takes, until the transaction ends, the lock that queues the allocations
-- of Pod network blocks: the allocation that waited sees the block the
-- one before it took. Without it, creations at the same instant all pick
-- the same block, and all but one are refused by the exclusion constraint
-- or, checking it at the same time, rolled back as a deadlock, and try
-- again, round after round.
SELECT pg_advisory_xact_lock(7164937810002001);

-- name: ClusterAllocatePodCIDR :one
-- Gives the cluster the first block of @bits in the pool that overlaps no
-- live cluster's Pod network, pooled or not; no row when the pool is
-- full. Two transactions that pick the same block at once cannot both
-- commit: the second fails on clusters_pod_cidr_pooled_excl, and the
-- caller tries again. IPv4 pools only (the settings check it).
UPDATE clusters SET pod_cidr = b.block, pod_cidr_pooled = TRUE
FROM (
    SELECT c.block FROM (
        SELECT set_masklen(network(sqlc.arg(pool)::cidr) + (i << (32 - sqlc.arg(bits)::int)), sqlc.arg(bits)::int)::cidr AS block
        FROM generate_series(0::bigint, (1::bigint << (sqlc.arg(bits)::int - masklen(sqlc.arg(pool)::cidr))) - 1) i) c
    WHERE NOT EXISTS (
        SELECT 1 FROM clusters o
        WHERE o.status <> 'deleted' AND o.pod_cidr && c.block AND o.id <> sqlc.arg(id))
    LIMIT 1) b
WHERE clusters.id = sqlc.arg(id)
RETURNING clusters.pod_cidr;

-- name: ClusterSetPodCIDR :exec
-- Gives the cluster the settings' one Pod network (no pool set).
UPDATE clusters SET pod_cidr = sqlc.arg(pod_cidr)::cidr, pod_cidr_pooled = FALSE WHERE id = sqlc.arg(id);

-- name: ClusterPodCIDRUnique :one
-- Whether no other live cluster's Pod network overlaps the cluster's.
SELECT (NOT EXISTS (
    SELECT 1 FROM clusters o, clusters c
    WHERE c.id = sqlc.arg(id) AND o.id <> c.id AND o.status <> 'deleted' AND o.pod_cidr && c.pod_cidr))::boolean AS pod_cidr_unique;

-- name: AdminClusterListOlder :many
-- Every user's clusters as the admins' list shows them, newest first,
-- from before @before_id (0: the newest). Filters, empty for none: @status
-- (none: every cluster but the deleted ones), the owner's email, the
-- Kubernetes version, the access mode, and @pattern, a substring of the
-- name or the slug (escaped, between two %). A search's matches are found
-- first, through the trigram indexes on lower(name) and lower(slug).
WITH matches AS MATERIALIZED (
    SELECT m.id FROM clusters m
    WHERE @pattern::text <> '' AND (lower(m.name) LIKE lower(@pattern::text) OR lower(m.slug) LIKE lower(@pattern::text))
)
SELECT c.id, c.name, c.slug, c.owner_id, u.email AS owner_email, c.status, c.kubernetes_version,
       c.public_access_mode, c.created_at,
       (SELECT count(*) FROM nodes n WHERE n.cluster_id = c.id)::bigint AS nodes
FROM clusters c
JOIN users u ON u.id = c.owner_id
WHERE ((@status::text = '' AND c.status <> 'deleted') OR c.status = @status::text)
  AND (@owner_email::text = '' OR c.owner_id IN (SELECT o.id FROM users o WHERE lower(o.email) = lower(@owner_email::text)))
  AND (@kubernetes_version::text = '' OR c.kubernetes_version = @kubernetes_version::text)
  AND (@access_mode::text = '' OR c.public_access_mode = @access_mode::text)
  AND (@pattern::text = '' OR c.id IN (SELECT matches.id FROM matches))
  AND (@before_id::bigint = 0 OR c.id < @before_id::bigint)
ORDER BY c.id DESC
LIMIT @row_limit;

-- name: AdminClusterListNewer :many
-- The page before the one that starts at @after_id: as
-- AdminClusterListOlder, the clusters above @after_id, oldest first (the
-- caller turns them round).
WITH matches AS MATERIALIZED (
    SELECT m.id FROM clusters m
    WHERE @pattern::text <> '' AND (lower(m.name) LIKE lower(@pattern::text) OR lower(m.slug) LIKE lower(@pattern::text))
)
SELECT c.id, c.name, c.slug, c.owner_id, u.email AS owner_email, c.status, c.kubernetes_version,
       c.public_access_mode, c.created_at,
       (SELECT count(*) FROM nodes n WHERE n.cluster_id = c.id)::bigint AS nodes
FROM clusters c
JOIN users u ON u.id = c.owner_id
WHERE ((@status::text = '' AND c.status <> 'deleted') OR c.status = @status::text)
  AND (@owner_email::text = '' OR c.owner_id IN (SELECT o.id FROM users o WHERE lower(o.email) = lower(@owner_email::text)))
  AND (@kubernetes_version::text = '' OR c.kubernetes_version = @kubernetes_version::text)
  AND (@access_mode::text = '' OR c.public_access_mode = @access_mode::text)
  AND (@pattern::text = '' OR c.id IN (SELECT matches.id FROM matches))
  AND c.id > @after_id::bigint
ORDER BY c.id
LIMIT @row_limit;

-- name: AdminClusterListSorted :many
-- AdminClusterListOlder in the order of the column the admin chose
-- (@sort_key: name, owner, status, version, nodes or created;
-- @descending), a page at @row_offset.
WITH matches AS MATERIALIZED (
    SELECT m.id FROM clusters m
    WHERE @pattern::text <> '' AND (lower(m.name) LIKE lower(@pattern::text) OR lower(m.slug) LIKE lower(@pattern::text))
)
SELECT c.id, c.name, c.slug, c.owner_id, u.email AS owner_email, c.status, c.kubernetes_version,
       c.public_access_mode, c.created_at,
       n.nodes
FROM clusters c
JOIN users u ON u.id = c.owner_id
CROSS JOIN LATERAL (SELECT count(*)::bigint AS nodes FROM nodes WHERE nodes.cluster_id = c.id) n
WHERE ((@status::text = '' AND c.status <> 'deleted') OR c.status = @status::text)
  AND (@owner_email::text = '' OR c.owner_id IN (SELECT o.id FROM users o WHERE lower(o.email) = lower(@owner_email::text)))
  AND (@kubernetes_version::text = '' OR c.kubernetes_version = @kubernetes_version::text)
  AND (@access_mode::text = '' OR c.public_access_mode = @access_mode::text)
  AND (@pattern::text = '' OR c.id IN (SELECT matches.id FROM matches))
ORDER BY
  CASE WHEN NOT @descending::bool THEN CASE @sort_key::text WHEN 'name' THEN lower(c.name) WHEN 'owner' THEN lower(u.email) WHEN 'status' THEN c.status WHEN 'version' THEN c.kubernetes_version END END,
  CASE WHEN @descending::bool THEN CASE @sort_key::text WHEN 'name' THEN lower(c.name) WHEN 'owner' THEN lower(u.email) WHEN 'status' THEN c.status WHEN 'version' THEN c.kubernetes_version END END DESC,
  CASE WHEN @sort_key::text = 'nodes' AND NOT @descending::bool THEN n.nodes END,
  CASE WHEN @sort_key::text = 'nodes' AND @descending::bool THEN n.nodes END DESC,
  CASE WHEN @sort_key::text = 'created' AND NOT @descending::bool THEN c.created_at END,
  CASE WHEN @sort_key::text = 'created' AND @descending::bool THEN c.created_at END DESC,
  c.id DESC
LIMIT @row_limit OFFSET @row_offset;

-- name: ClusterSuspend :one
-- An admin suspends a ready cluster: joins are refused from now on, and
-- the reconcile job scales its control plane to 0.
UPDATE clusters
SET status = 'suspended', suspended_at = now(), suspended_by = @suspended_by, suspended_replicas = NULL, updated_at = now()
WHERE id = @id AND status = 'ready' AND delete_requested_at IS NULL
RETURNING *;

-- name: ClusterResume :one
-- An admin resumes a suspended cluster: the reconcile job scales its
-- control plane back and marks it ready once it answers (within the
-- ready timeout, counted from reconcile_started_at).
UPDATE clusters
SET status = 'resuming', suspended_at = NULL, suspended_by = NULL, reconcile_started_at = now(), updated_at = now()
WHERE id = @id AND status = 'suspended' AND delete_requested_at IS NULL
RETURNING *;

-- name: ClusterSetSuspendedReplicas :exec
-- Keeps the control plane's replica count from before the suspension,
-- once: a second scale-down (which reads 0) leaves it.
UPDATE clusters SET suspended_replicas = @replicas
WHERE id = @id AND status = 'suspended' AND suspended_replicas IS NULL;

-- name: ClusterLockForChange :one
-- Takes the lock of a user's cluster for a change of what its entity tag
-- is made of (ClusterGetTagged): the API's conditional changes and the
-- console's edits of its managed ingress take it first, and queue behind
-- each other. FOR NO KEY UPDATE: rows that refer to the cluster (its
-- events, jobs' writes) are not held up by it.
SELECT id FROM clusters WHERE id = @id AND clusters.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[])) AND status <> 'deleted' FOR NO KEY UPDATE;

-- name: ClusterGetTagged :one
-- A user's cluster with what its entity tag is made of besides its own
-- columns: its managed ingress switch and mode (false and '' without a
-- row), read in one statement so that the tag is the row's.
SELECT sqlc.embed(clusters), coalesce(ci.enabled, false)::boolean AS ingress_enabled,
       coalesce(ci.mode, '')::text AS ingress_mode
FROM clusters
LEFT JOIN cluster_ingress ci ON ci.cluster_id = clusters.id
WHERE clusters.id = @id AND clusters.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))
  AND clusters.status <> 'deleted';

-- name: ClusterLockLiveForChange :one
-- ClusterLockForChange of a cluster already found for the member who
-- acts (the managed ingress's changes, called with the cluster).
SELECT id FROM clusters WHERE id = @id AND status <> 'deleted' FOR NO KEY UPDATE;

-- name: ClusterCountActiveMadeBy :one
-- The live clusters a user made, in any organization.
SELECT count(*) FROM clusters WHERE owner_id = @owner_id AND status <> 'deleted';

-- name: ClusterIDsOfOrg :many
-- The organization's clusters that are not deleted.
SELECT id FROM clusters WHERE org_id = @org_id AND status <> 'deleted' ORDER BY id;

-- name: ClusterForKubeconfig :one
-- A cluster of the organization with what the member's kubeconfig is
-- made from: the member's role, their email, whether viewers may have
-- one, and whether the organization is the member's personal one.
SELECT sqlc.embed(clusters), m.role AS member_role, u.email AS member_email,
       o.viewer_kubeconfig, (o.personal_of IS NOT DISTINCT FROM m.user_id)::boolean AS personal_owner
FROM clusters
JOIN organizations o ON o.id = clusters.org_id
JOIN organization_members m ON m.org_id = clusters.org_id AND m.user_id = @user_id
JOIN users u ON u.id = m.user_id
WHERE clusters.id = @id AND clusters.org_id = @org_id AND clusters.status <> 'deleted';

-- name: ClusterOrgOfMember :one
-- The organization of a cluster that user is a member of, whichever the
-- console works in: a link to a cluster of another of their
-- organizations offers to switch to it. Anyone else finds nothing.
SELECT o.id, o.name FROM clusters c JOIN organizations o ON o.id = c.org_id
WHERE c.id = @id AND c.status <> 'deleted'
  AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = c.org_id AND om.user_id = @user_id AND om.role = ANY (ARRAY['owner', 'admin', 'member', 'viewer']));
