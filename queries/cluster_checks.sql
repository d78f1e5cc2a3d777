-- name: ClusterCheckSchedule :exec
-- Makes the cluster's check of kind due at due_at, or sooner if it is due
-- sooner already; a check that was idle becomes due.
INSERT INTO cluster_checks (cluster_id, kind, due_at)
VALUES (@cluster_id, @kind, @due_at)
ON CONFLICT (cluster_id, kind) DO UPDATE
SET due_at = LEAST(coalesce(cluster_checks.due_at, EXCLUDED.due_at), EXCLUDED.due_at);

-- name: ClusterCheckClaimDue :many
-- Claims up to batch checks of kind that are due, oldest first. The
-- checks of ready clusters move to leased_until, so that no other
-- dispatcher claims them and a check whose job is lost comes due again
-- then; those of clusters not ready (or being deleted) go idle until the
-- cluster is ready again, unless any_state says the kind checks clusters
-- in every state (DNS records live from creation to deletion). Locked
-- rows are skipped.
WITH due AS (
    SELECT cc.cluster_id, cc.kind,
        (sqlc.arg(any_state)::boolean OR (c.status = 'ready' AND c.delete_requested_at IS NULL))::boolean AS ready
    FROM cluster_checks cc JOIN clusters c ON c.id = cc.cluster_id
    WHERE cc.kind = @kind AND cc.due_at <= now()
    ORDER BY cc.due_at
    LIMIT @batch
    FOR UPDATE OF cc SKIP LOCKED)
UPDATE cluster_checks
SET due_at = CASE WHEN due.ready THEN sqlc.arg(leased_until)::timestamptz END
FROM due
WHERE cluster_checks.cluster_id = due.cluster_id AND cluster_checks.kind = due.kind
RETURNING cluster_checks.cluster_id, due.ready;

-- name: ClusterCheckSucceeded :one
-- Records a check that reached its cluster; due_at is the next one (NULL:
-- idle until asked). Returns whether the cluster was unreachable before.
UPDATE cluster_checks new
SET due_at = @due_at, failures = 0, unreachable_since = NULL, last_error = '', checked_at = now()
FROM cluster_checks old
WHERE new.cluster_id = @cluster_id AND new.kind = @kind
  AND old.cluster_id = new.cluster_id AND old.kind = new.kind
RETURNING (old.unreachable_since IS NOT NULL)::boolean AS was_unreachable;

-- name: ClusterCheckFailed :one
-- Records a check that could not reach its cluster: one more failure,
-- unreachable since the first failure, due again after base_seconds
-- doubled for each failure before this one, at most max_seconds, give or
-- take a tenth (so that clusters that failed together do not stay in
-- step). Returns the row and whether this failure is the first of its run.
UPDATE cluster_checks new
SET failures = old.failures + 1, last_error = @last_error, checked_at = now(),
    due_at = now() + LEAST(sqlc.arg(base_seconds)::float8 * power(2, LEAST(old.failures, 30)), sqlc.arg(max_seconds)::float8) * (0.9 + random() * 0.2) * interval '1 second',
    unreachable_since = coalesce(old.unreachable_since, now())
FROM cluster_checks old
WHERE new.cluster_id = @cluster_id AND new.kind = @kind
  AND old.cluster_id = new.cluster_id AND old.kind = new.kind
RETURNING new.failures, new.unreachable_since, (old.unreachable_since IS NULL)::boolean AS first_failure;

-- name: ClusterCheckIdle :exec
-- Leaves the check idle until something asks for it again.
UPDATE cluster_checks SET due_at = NULL WHERE cluster_id = @cluster_id AND kind = @kind;

-- name: ClusterCheckGet :one
SELECT * FROM cluster_checks WHERE cluster_id = @cluster_id AND kind = @kind;

-- name: ClusterCheckMakeAllDue :execrows
-- Makes every scheduled check of kind due now (idle ones stay idle).
UPDATE cluster_checks SET due_at = now() WHERE kind = @kind AND due_at IS NOT NULL;

-- name: ClusterGetWithCheck :one
-- A cluster of the organization, for a member in one of roles, deleted ones included, with its check of the
-- kind given (NULL times and no error without one): the cluster page
-- reads both in one query. ingress_status is where its managed ingress
-- stands ('off' when never on): the page watches it while a job works on
-- it. node_count is how many nodes the platform recorded for it (the node
-- health check keeps them): a ready cluster without any is offered the
-- join command at the top of its page, without asking the cluster.
-- latest_events are its newest event_limit events, oldest first, as a
-- JSON array of objects keyed as queries.ClusterEvent's fields: the page
-- and its Events tab show them, and need no second round trip.
SELECT sqlc.embed(clusters), cc.checked_at, cc.unreachable_since,
       coalesce(cc.last_error, '')::text AS last_error,
       coalesce(ci.status, 'off')::text AS ingress_status,
       (SELECT count(*) FROM nodes n WHERE n.cluster_id = clusters.id)::int AS node_count,
       coalesce((
           SELECT json_agg(json_build_object('ID', e.id, 'ClusterID', e.cluster_id, 'Level', e.level, 'Reason', e.reason,
                                             'Message', e.message, 'CreatedAt', e.created_at, 'Count', e.count,
                                             'LastSeenAt', e.last_seen_at) ORDER BY e.id)
           FROM (SELECT * FROM cluster_events WHERE cluster_events.cluster_id = clusters.id ORDER BY cluster_events.id DESC LIMIT @event_limit) e
       ), '[]')::json AS latest_events
FROM clusters
LEFT JOIN cluster_checks cc ON cc.cluster_id = clusters.id AND cc.kind = @kind
LEFT JOIN cluster_ingress ci ON ci.cluster_id = clusters.id
WHERE clusters.id = @id AND clusters.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]));
