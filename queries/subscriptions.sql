-- name: SubscriptionGet :one
SELECT * FROM subscriptions WHERE org_id = @org_id;

-- name: SubscriptionLock :one
-- The organization's subscription, locked: every change to it and every
-- order paid for it take this lock first.
SELECT * FROM subscriptions WHERE org_id = @org_id FOR UPDATE;

-- name: SubscriptionLockForMember :one
-- SubscriptionLock for a member of the organization in one of roles; no
-- row for anyone else.
SELECT * FROM subscriptions WHERE subscriptions.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[])) FOR UPDATE;

-- name: SubscriptionWithPlan :one
-- The organization's subscription with its plan and the plan scheduled
-- next, and the organization's name and whether it is a personal one.
SELECT sqlc.embed(s), sqlc.embed(p),
       coalesce(n.name, '')::text AS scheduled_plan_name, o.name AS org_name, (o.personal_of IS NOT NULL)::boolean AS org_personal
FROM subscriptions s
JOIN organizations o ON o.id = s.org_id
JOIN plans p ON p.id = s.plan_id
LEFT JOIN plans n ON n.id = s.scheduled_plan_id
WHERE s.org_id = @org_id;

-- name: SubscriptionWithPlanForMember :one
-- SubscriptionWithPlan for a member of the organization in one of roles;
-- no row for anyone else.
SELECT sqlc.embed(s), sqlc.embed(p),
       coalesce(n.name, '')::text AS scheduled_plan_name, o.name AS org_name, (o.personal_of IS NOT NULL)::boolean AS org_personal
FROM subscriptions s
JOIN organizations o ON o.id = s.org_id
JOIN plans p ON p.id = s.plan_id
LEFT JOIN plans n ON n.id = s.scheduled_plan_id
WHERE s.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]));

-- name: SubscriptionStartPeriod :one
-- Starts (or extends) a paid period of a plan: active, its anchor and
-- boundaries, what it was worth; a scheduled change and a cancel fall
-- away.
UPDATE subscriptions SET plan_id = @plan_id, status = 'active', period = @period,
    period_anchor = @period_anchor, current_period_start = @period_start, current_period_end = @period_end,
    period_amount = @period_amount, period_currency = @period_currency,
    cancel_at_period_end = FALSE, scheduled_plan_id = NULL, scheduled_period = NULL, updated_at = now()
WHERE org_id = @org_id
RETURNING *;

-- name: SubscriptionSetPlan :one
-- Puts the organization on a plan with no paid period (the default plan after a
-- cancel or an expiry, or an admin's choice), with the status that says
-- why.
UPDATE subscriptions SET plan_id = @plan_id, status = @status, period = NULL, period_anchor = NULL,
    current_period_start = now(), current_period_end = NULL, period_amount = 0,
    cancel_at_period_end = FALSE, scheduled_plan_id = NULL, scheduled_period = NULL, updated_at = now()
WHERE org_id = @org_id
RETURNING *;

-- name: SubscriptionSetStatus :one
UPDATE subscriptions SET status = @status, updated_at = now() WHERE org_id = @org_id RETURNING *;

-- name: SubscriptionSetPeriodEnd :one
-- Moves the end of the current period (an admin's extension, or a refund
-- that shortens it).
UPDATE subscriptions SET current_period_end = @period_end, status = CASE WHEN @period_end::timestamptz > now() THEN 'active' ELSE status END,
    updated_at = now()
WHERE org_id = @org_id AND current_period_end IS NOT NULL
RETURNING *;

-- name: SubscriptionSetCancel :one
-- Cancels at the period's end, or takes that back.
UPDATE subscriptions SET cancel_at_period_end = @cancel, scheduled_plan_id = NULL, scheduled_period = NULL, updated_at = now()
WHERE org_id = @org_id
RETURNING *;

-- name: SubscriptionSchedule :one
-- A downgrade: this plan from the period's end.
UPDATE subscriptions SET scheduled_plan_id = @plan_id, scheduled_period = @period, cancel_at_period_end = FALSE, updated_at = now()
WHERE org_id = @org_id
RETURNING *;

-- name: SubscriptionSetEndingNotified :exec
UPDATE subscriptions SET ending_notified_for = current_period_end WHERE org_id = @org_id;

-- name: SubscriptionsDue :many
-- Subscriptions with something to do: an active period that ended at
-- @now (the scheduled change, the cancel, or past due), a past-due one
-- whose grace ran out (ended before @grace_before), or a period that ends
-- before @notice_before whose owner was not told yet; a bounded batch,
-- skipping rows another worker holds.
SELECT * FROM subscriptions
WHERE current_period_end IS NOT NULL
  AND ((status = 'active' AND current_period_end <= @now::timestamptz)
       OR (status = 'past_due' AND current_period_end <= @grace_before::timestamptz)
       OR (status = 'active' AND current_period_end <= @notice_before::timestamptz
           AND ending_notified_for IS DISTINCT FROM current_period_end AND NOT cancel_at_period_end))
ORDER BY current_period_end
LIMIT @max_rows
FOR UPDATE SKIP LOCKED;

-- name: SubscriptionsByPlan :many
-- Active subscriptions by plan, for the billing overview.
SELECT p.id, p.name, p.is_default, p.currency,
       count(s.org_id) FILTER (WHERE s.status = 'active')::bigint AS active,
       count(s.org_id) FILTER (WHERE s.status = 'past_due')::bigint AS past_due,
       count(s.org_id) FILTER (WHERE s.cancel_at_period_end)::bigint AS cancelling
FROM plans p LEFT JOIN subscriptions s ON s.plan_id = p.id
GROUP BY p.id
ORDER BY p.archived_at IS NOT NULL, p.sort_order, p.id;

-- name: SubscriptionMoveToScheduled :one
-- The scheduled plan takes over at the period's end, past due until its
-- next period is paid (a renewal order, from the old end on).
UPDATE subscriptions SET plan_id = scheduled_plan_id, period = @period, status = 'past_due',
    period_amount = 0, scheduled_plan_id = NULL, scheduled_period = NULL, updated_at = now()
WHERE org_id = @org_id AND scheduled_plan_id IS NOT NULL
RETURNING *;

-- name: SubscriptionsFollowDefault :execrows
-- The organizations on the old default plan with no paid period (that
-- never bought one, or whose plan ended) follow the default to its new
-- plan.
UPDATE subscriptions SET plan_id = @new_default, updated_at = now()
WHERE plan_id = (SELECT id FROM plans WHERE is_default) AND plan_id <> @new_default AND current_period_end IS NULL;
