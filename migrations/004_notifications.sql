-- Per-user choice of which events reach which channel. A missing row means
-- the default for that pair (see package notify).
CREATE TABLE notification_preferences (
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind    TEXT NOT NULL,
    channel TEXT NOT NULL CHECK (channel IN ('email', 'in_app')),
    enabled BOOLEAN NOT NULL,
    PRIMARY KEY (user_id, kind, channel)
);

-- In-app notifications.
CREATE TABLE notifications (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    title      TEXT NOT NULL,
    body       TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    read_at    TIMESTAMPTZ
);

CREATE INDEX notifications_user_idx ON notifications (user_id, id DESC);

---- create above / drop below ----

DROP TABLE notifications;
DROP TABLE notification_preferences;
