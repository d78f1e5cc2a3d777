-- A team deleted while it has orders is closed rather than removed
-- (issue 38): the orders, kept for accounting, keep naming it. Its
-- members, invitations, API keys and webhook channels go; its
-- subscription is on the default plan; the row stays, with the time it
-- was closed, for the admins' books.
ALTER TABLE organizations ADD COLUMN closed_at TIMESTAMPTZ;

---- create above / drop below ----

ALTER TABLE organizations DROP COLUMN closed_at;
