-- Subscriptions and orders (issue 14, package billing).
--
-- Every user has exactly one subscription: the plan in effect, its state,
-- and the paid period it runs in. A user who never bought one is on the
-- default plan with no period end. users.plan_id gives way to it: a
-- trigger gives each new user their row, so no path can make a user
-- without one.
CREATE TABLE subscriptions (
    user_id              BIGINT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    plan_id              BIGINT NOT NULL REFERENCES plans (id),
    -- active: in a paid period, or on the default plan; past_due: the
    -- period ended unpaid and the grace period runs, limits kept;
    -- cancelled: back on the default plan after a cancel took effect;
    -- expired: back on the default plan after the grace period.
    status               TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'past_due', 'cancelled', 'expired')),
    -- The paid period: NULL on a plan that was never paid for.
    period               TEXT CHECK (period IN ('month', 'year')),
    -- Period boundaries are worked out from the anchor (billing.Period).
    period_anchor        TIMESTAMPTZ,
    current_period_start TIMESTAMPTZ NOT NULL DEFAULT now(),
    current_period_end   TIMESTAMPTZ,
    -- What the current period was worth (its list price), for the credit
    -- an upgrade gets for the unused part.
    period_amount        BIGINT NOT NULL DEFAULT 0 CHECK (period_amount >= 0),
    period_currency      TEXT NOT NULL DEFAULT 'USD',
    cancel_at_period_end BOOLEAN NOT NULL DEFAULT FALSE,
    -- A downgrade waits for the period's end.
    scheduled_plan_id    BIGINT REFERENCES plans (id),
    scheduled_period     TEXT CHECK (scheduled_period IN ('month', 'year')),
    -- The period end whose 7-day notice went out, so that it goes once.
    ending_notified_for  TIMESTAMPTZ,
    updated_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((period IS NULL) = (current_period_end IS NULL)),
    CHECK (current_period_end IS NULL OR period_anchor IS NOT NULL)
);
CREATE INDEX subscriptions_plan ON subscriptions (plan_id);
-- The period-end job reads the subscriptions whose period has ended.
CREATE INDEX subscriptions_period_end ON subscriptions (current_period_end) WHERE current_period_end IS NOT NULL;

INSERT INTO subscriptions (user_id, plan_id, current_period_start)
SELECT u.id, coalesce(u.plan_id, (SELECT id FROM plans WHERE is_default)), u.created_at FROM users u;

ALTER TABLE users DROP COLUMN plan_id;

CREATE FUNCTION subscriptions_for_new_user() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO subscriptions (user_id, plan_id) SELECT NEW.id, id FROM plans WHERE is_default;
    RETURN NEW;
END $$;
CREATE TRIGGER users_subscription AFTER INSERT ON users
    FOR EACH ROW EXECUTE FUNCTION subscriptions_for_new_user();

-- Orders: a plan for a period, priced when made. amount is the plan's
-- price, credit the unused part of the period it replaces, tax on what is
-- left, total what is paid.
CREATE SEQUENCE order_number_seq;
CREATE TABLE orders (
    id           BIGSERIAL PRIMARY KEY,
    number       TEXT NOT NULL UNIQUE
                 DEFAULT 'KB-' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD') || '-' || lpad(nextval('order_number_seq')::text, 6, '0'),
    user_id      BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    plan_id      BIGINT NOT NULL REFERENCES plans (id),
    period       TEXT NOT NULL CHECK (period IN ('month', 'year')),
    -- new: starts a period now (a first purchase or an upgrade); renewal:
    -- adds a period after the current one of the same plan.
    kind         TEXT NOT NULL CHECK (kind IN ('new', 'renewal')),
    currency     TEXT NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    amount       BIGINT NOT NULL CHECK (amount >= 0),
    credit       BIGINT NOT NULL DEFAULT 0 CHECK (credit >= 0 AND credit <= amount),
    tax          BIGINT NOT NULL DEFAULT 0 CHECK (tax >= 0),
    tax_label    TEXT NOT NULL DEFAULT '',
    total        BIGINT NOT NULL CHECK (total = amount - credit + tax),
    status       TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'paid', 'cancelled', 'expired', 'refunded')),
    method       TEXT NOT NULL CHECK (method IN ('manual', 'stripe')),
    -- The payment's reference: what the admin typed for a manual order,
    -- the PaymentIntent of a Stripe one.
    reference    TEXT NOT NULL DEFAULT '',
    stripe_session_id TEXT UNIQUE,
    -- The period the order paid for, once paid.
    period_start TIMESTAMPTZ,
    period_end   TIMESTAMPTZ,
    refunded_amount BIGINT NOT NULL DEFAULT 0 CHECK (refunded_amount >= 0 AND refunded_amount <= total),
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at   TIMESTAMPTZ NOT NULL,
    paid_at      TIMESTAMPTZ,
    closed_at    TIMESTAMPTZ,
    CHECK ((status IN ('paid', 'refunded')) = (paid_at IS NOT NULL))
);
CREATE INDEX orders_user ON orders (user_id, id DESC);
CREATE INDEX orders_status ON orders (status, id DESC);
-- Stripe refunds find their order by its PaymentIntent.
CREATE INDEX orders_reference ON orders (reference) WHERE method = 'stripe' AND reference <> '';
-- The expiry job reads pending orders by their deadline.
CREATE INDEX orders_pending_expiry ON orders (expires_at) WHERE status = 'pending';
-- One pending order per user at a time: a second purchase replaces it.
CREATE UNIQUE INDEX orders_one_pending ON orders (user_id) WHERE status = 'pending';

-- An order's history: created, checkout, webhook events, paid (and by
-- whom), cancelled, expired, refunded. A payment is applied exactly once:
-- the second 'paid' event of an order is refused by the index, whatever
-- the number of notifications about it; a Stripe event is recorded once.
CREATE TABLE order_events (
    id         BIGSERIAL PRIMARY KEY,
    order_id   BIGINT NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    actor_id   BIGINT REFERENCES users (id) ON DELETE SET NULL,
    stripe_event_id TEXT UNIQUE,
    detail     JSONB NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX order_events_order ON order_events (order_id, id);
CREATE UNIQUE INDEX order_events_paid_once ON order_events (order_id) WHERE kind = 'paid';

---- create above / drop below ----

DROP TABLE order_events;
DROP TABLE orders;
DROP SEQUENCE order_number_seq;
DROP TRIGGER users_subscription ON users;
DROP FUNCTION subscriptions_for_new_user();
ALTER TABLE users ADD COLUMN plan_id BIGINT REFERENCES plans (id);
UPDATE users SET plan_id = s.plan_id FROM subscriptions s, plans p
WHERE s.user_id = users.id AND p.id = s.plan_id AND NOT p.is_default;
DROP TABLE subscriptions;
