-- Subscriptions and orders belong to organizations (issue 38): the plan
-- and its limits are an organization's, and so is what is paid for it.
--
-- Every organization has exactly one subscription, its personal one the
-- subscription its user had (for one person nothing changes), a team's
-- the default plan until an owner buys one. A trigger gives each new
-- organization its row, as 037's gave each new user theirs; a new user
-- gets theirs through their personal organization (054's trigger).
--
-- The plan of an organization is now its subscription's: 058's bridge
-- goes, and the queries that read it join subscriptions by org_id.
DROP VIEW org_plans;

ALTER TABLE subscriptions ADD COLUMN org_id BIGINT REFERENCES organizations (id) ON DELETE CASCADE;

UPDATE subscriptions s SET org_id = o.id FROM organizations o WHERE o.personal_of = s.user_id;

-- Every user has a personal organization (054): a row left without one
-- fails here, loudly, rather than losing a paid plan.
ALTER TABLE subscriptions
    ALTER COLUMN org_id SET NOT NULL,
    DROP CONSTRAINT subscriptions_pkey,
    DROP COLUMN user_id,
    ADD PRIMARY KEY (org_id);

INSERT INTO subscriptions (org_id, plan_id, current_period_start)
SELECT o.id, (SELECT id FROM plans WHERE is_default), o.created_at
FROM organizations o
WHERE NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.org_id = o.id);

DROP TRIGGER users_subscription ON users;
DROP FUNCTION subscriptions_for_new_user();

CREATE FUNCTION subscriptions_for_new_org() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO subscriptions (org_id, plan_id) SELECT NEW.id, id FROM plans WHERE is_default;
    RETURN NEW;
END $$;
CREATE TRIGGER organizations_subscription AFTER INSERT ON organizations
    FOR EACH ROW EXECUTE FUNCTION subscriptions_for_new_org();

-- Orders are for an organization; user_id stays, as who placed the
-- order. Existing orders were placed by their user for themselves: their
-- personal organization's. Orders are kept for accounting: deleting the
-- organization does not delete them (and adminusers refuses to delete an
-- account with any).
ALTER TABLE orders ADD COLUMN org_id BIGINT REFERENCES organizations (id);

UPDATE orders SET org_id = o.id FROM organizations o WHERE o.personal_of = orders.user_id;

ALTER TABLE orders ALTER COLUMN org_id SET NOT NULL;

CREATE INDEX orders_org ON orders (org_id, id DESC);
-- One pending order per organization at a time: a second purchase, by
-- any of its owners, replaces it.
DROP INDEX orders_one_pending;
CREATE UNIQUE INDEX orders_one_pending ON orders (org_id) WHERE status = 'pending';

---- create above / drop below ----

-- Orders go back to their users. A user who had pending orders in
-- several organizations keeps the newest pending.
UPDATE orders SET status = 'cancelled', closed_at = now()
WHERE status = 'pending' AND id NOT IN (SELECT max(id) FROM orders WHERE status = 'pending' GROUP BY user_id);
DROP INDEX orders_one_pending;
CREATE UNIQUE INDEX orders_one_pending ON orders (user_id) WHERE status = 'pending';
DROP INDEX orders_org;
ALTER TABLE orders DROP COLUMN org_id;

-- Subscriptions go back to users: each keeps their personal
-- organization's; teams' are dropped.
DROP TRIGGER organizations_subscription ON organizations;
DROP FUNCTION subscriptions_for_new_org();

ALTER TABLE subscriptions ADD COLUMN user_id BIGINT REFERENCES users (id) ON DELETE CASCADE;
UPDATE subscriptions s SET user_id = o.personal_of FROM organizations o WHERE o.id = s.org_id;
DELETE FROM subscriptions WHERE user_id IS NULL;
ALTER TABLE subscriptions
    ALTER COLUMN user_id SET NOT NULL,
    DROP CONSTRAINT subscriptions_pkey,
    DROP COLUMN org_id,
    ADD PRIMARY KEY (user_id);

CREATE FUNCTION subscriptions_for_new_user() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO subscriptions (user_id, plan_id) SELECT NEW.id, id FROM plans WHERE is_default;
    RETURN NEW;
END $$;
CREATE TRIGGER users_subscription AFTER INSERT ON users
    FOR EACH ROW EXECUTE FUNCTION subscriptions_for_new_user();

CREATE VIEW org_plans AS
SELECT o.id AS org_id, coalesce(s.plan_id, (SELECT id FROM plans WHERE is_default LIMIT 1)) AS plan_id
FROM organizations o
LEFT JOIN subscriptions s ON s.user_id = o.personal_of;
