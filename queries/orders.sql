-- name: OrderCreate :one
-- An order for the organization, placed by user_id.
INSERT INTO orders (org_id, user_id, plan_id, period, kind, currency, amount, credit, tax, tax_label, total, method, expires_at)
VALUES (@org_id, @user_id, @plan_id, @period, @kind, @currency, @amount, @credit, @tax, @tax_label, @total, @method, @expires_at)
RETURNING *;

-- name: OrderGet :one
SELECT * FROM orders WHERE id = @id;

-- name: OrderGetForMember :one
-- An order of the organization, for a member in one of roles, with the
-- organization's name and who placed it; another organization's order,
-- or a user who is not such a member, finds nothing.
SELECT sqlc.embed(orders), o.name AS org_name, (o.personal_of IS NOT NULL)::boolean AS org_personal,
       u.email AS placed_by_email, u.name AS placed_by_name
FROM orders
JOIN organizations o ON o.id = orders.org_id
JOIN users u ON u.id = orders.user_id
WHERE orders.id = @id AND orders.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]));

-- name: OrderExistsInOrg :one
-- Whether the organization has an order with id (to tell a member who may
-- not read it from a stranger).
SELECT EXISTS (SELECT 1 FROM orders WHERE id = @id AND org_id = @org_id)::boolean AS found;

-- name: OrderByStripeSession :one
-- The order a Checkout Session was opened for: the only way a session's
-- webhook events find their order.
SELECT * FROM orders WHERE stripe_session_id = @stripe_session_id;

-- name: OrderLock :one
SELECT * FROM orders WHERE id = @id FOR UPDATE;

-- name: OrderLockForMember :one
-- OrderLock of an order of the organization, for a member in one of
-- roles; no row for anyone else.
SELECT * FROM orders WHERE id = @id AND orders.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[])) FOR UPDATE;

-- name: OrderPendingForOrg :one
SELECT * FROM orders WHERE org_id = @org_id AND status = 'pending';

-- name: OrderSetStripeSession :one
-- A pending order's Checkout Session (NULL: none), replacing @previous
-- only: of two sessions opened at once, one is kept; no row when the
-- other won or the order is no longer pending.
UPDATE orders SET stripe_session_id = sqlc.narg('stripe_session_id')
WHERE id = @id AND status = 'pending' AND stripe_session_id IS NOT DISTINCT FROM sqlc.narg('previous')::text
RETURNING *;

-- name: OrderMarkPaid :one
-- Pending (or expired: money that came late is still taken) to paid, with
-- the period it paid for.
UPDATE orders SET status = 'paid', paid_at = @paid_at, reference = @reference,
    period_start = @period_start, period_end = @period_end, closed_at = NULL
WHERE id = @id AND status IN ('pending', 'expired')
RETURNING *;

-- name: OrderClose :one
-- A pending order cancelled or expired.
UPDATE orders SET status = @status, closed_at = now()
WHERE id = @id AND status = 'pending'
RETURNING *;

-- name: OrderRefund :one
UPDATE orders SET status = CASE WHEN @refunded_amount::bigint >= total THEN 'refunded' ELSE status END,
    refunded_amount = @refunded_amount, closed_at = now()
WHERE id = @id AND status IN ('paid', 'refunded')
RETURNING *;

-- name: OrdersExpire :many
-- Pending orders past their deadline, a bounded batch.
UPDATE orders SET status = 'expired', closed_at = now()
WHERE id IN (SELECT o.id FROM orders o WHERE o.status = 'pending' AND o.expires_at <= @now::timestamptz
             ORDER BY o.expires_at LIMIT @max_rows FOR UPDATE SKIP LOCKED)
RETURNING *;

-- name: OrderListForMember :many
-- An organization's orders, for a member in one of roles (none for
-- anyone else), newest first, paged by id (keyset: ids below @before_id,
-- 0 for the first page).
SELECT sqlc.embed(orders), plans.name AS plan_name FROM orders JOIN plans ON plans.id = orders.plan_id
WHERE orders.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))
  AND (@before_id::bigint = 0 OR orders.id < @before_id)
ORDER BY orders.id DESC
LIMIT @max_rows;

-- name: OrderListAdmin :many
-- Orders for the back office, newest first, filtered (empty filters match
-- all; the email is who placed the order) and paged by id (keyset: ids
-- below @before, 0 for the first page), with the organization each is for.
SELECT sqlc.embed(orders), plans.name AS plan_name, users.email AS user_email, organizations.name AS org_name
FROM orders JOIN plans ON plans.id = orders.plan_id JOIN users ON users.id = orders.user_id
JOIN organizations ON organizations.id = orders.org_id
WHERE (@status::text = '' OR orders.status = @status)
  AND (@method::text = '' OR orders.method = @method)
  AND (@user_email::text = '' OR lower(users.email) = lower(@user_email))
  AND (@number::text = '' OR orders.number = @number)
  AND (@since::timestamptz IS NULL OR orders.created_at >= @since::timestamptz)
  AND (@until::timestamptz IS NULL OR orders.created_at < @until::timestamptz)
  AND (@before::bigint = 0 OR orders.id < @before)
ORDER BY orders.id DESC
LIMIT @max_rows;

-- name: OrderEventAdd :one
INSERT INTO order_events (order_id, kind, actor_id, stripe_event_id, detail)
VALUES (@order_id, @kind, @actor_id, @stripe_event_id, @detail)
RETURNING *;

-- name: OrderEvents :many
SELECT order_events.*, coalesce(users.email, '')::text AS actor_email
FROM order_events LEFT JOIN users ON users.id = order_events.actor_id
WHERE order_events.order_id = @order_id
ORDER BY order_events.id;

-- name: RevenueByMonth :many
-- Paid money by month and currency (refunds taken off), since @since.
SELECT (date_trunc('month', paid_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')::timestamptz AS month, currency,
       sum(total - refunded_amount)::bigint AS revenue, count(*)::bigint AS orders
FROM orders
WHERE paid_at IS NOT NULL AND paid_at >= @since::timestamptz
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: OrdersAwaiting :one
SELECT count(*)::bigint AS orders FROM orders WHERE status = 'pending';

-- name: OrderByReference :one
-- The order a payment (a Stripe PaymentIntent) paid.
SELECT * FROM orders WHERE reference = @reference AND method = 'stripe' ORDER BY id DESC LIMIT 1;
