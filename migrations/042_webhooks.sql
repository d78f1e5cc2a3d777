-- Webhook channels: a user's own (user_id set), which receive the kinds
-- the user turned on in the webhook column of the preferences matrix, and
-- the platform's (user_id NULL), which receive the operator alerts. The
-- URL (chat services put their token in it) and the signing secret are
-- sealed with the platform key; url_host is what the pages show.
CREATE TABLE webhook_channels (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id       BIGINT REFERENCES users (id) ON DELETE CASCADE,
    kind          TEXT NOT NULL CHECK (kind IN ('generic', 'slack', 'dingtalk', 'feishu', 'wecom')),
    name          TEXT NOT NULL,
    url_sealed    TEXT NOT NULL,
    url_host      TEXT NOT NULL,
    secret_sealed TEXT NOT NULL DEFAULT '',
    -- The language the channel's messages are worded in.
    lang          TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX webhook_channels_user_idx ON webhook_channels (user_id, id);

-- Each attempt at a delivery: the delivery log. Kept for 30 days (the
-- cleanup job).
CREATE TABLE webhook_attempts (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id    BIGINT NOT NULL REFERENCES webhook_channels (id) ON DELETE CASCADE,
    event_id      TEXT NOT NULL,
    event_kind    TEXT NOT NULL,
    attempt       INT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('delivered', 'retrying', 'failed')),
    response_code INT NOT NULL DEFAULT 0,
    error         TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX webhook_attempts_channel_idx ON webhook_attempts (channel_id, id DESC);
CREATE INDEX webhook_attempts_created_idx ON webhook_attempts (created_at);

-- The webhook column of the preferences matrix.
ALTER TABLE notification_preferences DROP CONSTRAINT notification_preferences_channel_check;
ALTER TABLE notification_preferences ADD CONSTRAINT notification_preferences_channel_check
    CHECK (channel IN ('email', 'in_app', 'webhook'));

---- create above / drop below ----

DELETE FROM notification_preferences WHERE channel = 'webhook';
ALTER TABLE notification_preferences DROP CONSTRAINT notification_preferences_channel_check;
ALTER TABLE notification_preferences ADD CONSTRAINT notification_preferences_channel_check
    CHECK (channel IN ('email', 'in_app'));
DROP TABLE webhook_attempts;
DROP TABLE webhook_channels;
