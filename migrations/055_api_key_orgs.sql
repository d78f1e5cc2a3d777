-- An API key belongs to a member within an organization (issue 38): it
-- acts in that organization only, with at most the member's role, and
-- stops working when they leave it. The keys that exist are their
-- owner's personal organization's.
ALTER TABLE api_keys ADD COLUMN org_id BIGINT REFERENCES organizations (id) ON DELETE CASCADE;

UPDATE api_keys k SET org_id = o.id FROM organizations o WHERE o.personal_of = k.user_id;

ALTER TABLE api_keys ALTER COLUMN org_id SET NOT NULL;

CREATE INDEX api_keys_org_user_idx ON api_keys (org_id, user_id);

---- create above / drop below ----

ALTER TABLE api_keys DROP COLUMN org_id;
