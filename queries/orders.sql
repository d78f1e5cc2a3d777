-- name: OrderCreate :one
INSERT INTO orders (user_id, plan_id, period, kind, currency, amount, credit, tax, tax_label, total, method, expires_at)
VALUES (@user_id, @plan_id, @period, @kind, @currency, @amount, @credit, @tax, @tax_label, @total, @method, @expires_at)
RETURNING *;

-- name: OrderGet :one
SELECT * FROM orders WHERE id = @id;

-- name: OrderGetForUser :one
-- An order of one user; for another user, no row.
SELECT * FROM orders WHERE id = @id AND user_id = @user_id;

-- name: OrderByStripeSession :one
-- The order a Checkout Session was opened for: the only way a session's
-- webhook events find their order.
SELECT * FROM orders WHERE stripe_session_id = @stripe_session_id;

-- name: OrderLock :one
SELECT * FROM orders WHERE id = @id FOR UPDATE;

-- name: OrderPendingForUser :one
SELECT * FROM orders WHERE user_id = @user_id AND status = 'pending';

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

-- name: OrderListForUser :many
-- A user's orders, newest first, paged by id (keyset: ids below
-- @before_id, 0 for the first page).
SELECT sqlc.embed(orders), plans.name AS plan_name FROM orders JOIN plans ON plans.id = orders.plan_id
WHERE orders.user_id = @user_id AND (@before_id::bigint = 0 OR orders.id < @before_id)
ORDER BY orders.id DESC
LIMIT @max_rows;

-- name: OrderListAdmin :many
-- Orders for the back office, newest first, filtered (empty filters match
-- all) and paged by id (keyset: ids below @before, 0 for the first page).
SELECT sqlc.embed(orders), plans.name AS plan_name, users.email AS user_email
FROM orders JOIN plans ON plans.id = orders.plan_id JOIN users ON users.id = orders.user_id
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
