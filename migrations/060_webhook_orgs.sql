-- Webhook channels belong to an organization (issue 38), as its clusters
-- do: they receive the events of the organization's clusters, and its
-- owners and admins manage them. A user's channels move to their personal
-- organization. user_id is now who added the channel: their choices in
-- the webhook column of the preferences decide which kinds the channel
-- gets (package notify), and a user's own events (billing, security) go
-- to the channels they added in their personal organization. Platform
-- channels keep both NULL.
ALTER TABLE webhook_channels ADD COLUMN org_id BIGINT REFERENCES organizations (id) ON DELETE CASCADE;

UPDATE webhook_channels c SET org_id = o.id FROM organizations o WHERE o.personal_of = c.user_id;

-- The channel stays the organization's when the account that added it
-- goes; the defaults then decide what it gets.
ALTER TABLE webhook_channels DROP CONSTRAINT webhook_channels_user_id_fkey;
ALTER TABLE webhook_channels ADD CONSTRAINT webhook_channels_user_id_fkey
    FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE webhook_channels ADD CONSTRAINT webhook_channels_platform_check
    CHECK (org_id IS NOT NULL OR user_id IS NULL);

DROP INDEX webhook_channels_user_idx;
CREATE INDEX webhook_channels_org_idx ON webhook_channels (org_id, id);
CREATE INDEX webhook_channels_user_idx ON webhook_channels (user_id);

---- create above / drop below ----

-- A team's channel goes back to who added it; one whose maker is gone
-- has no one to go back to.
DELETE FROM webhook_channels WHERE org_id IS NOT NULL AND user_id IS NULL;
DROP INDEX webhook_channels_user_idx;
DROP INDEX webhook_channels_org_idx;
CREATE INDEX webhook_channels_user_idx ON webhook_channels (user_id, id);
ALTER TABLE webhook_channels DROP CONSTRAINT webhook_channels_platform_check;
ALTER TABLE webhook_channels DROP CONSTRAINT webhook_channels_user_id_fkey;
ALTER TABLE webhook_channels ADD CONSTRAINT webhook_channels_user_id_fkey
    FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;
ALTER TABLE webhook_channels DROP COLUMN org_id;
