-- The first answer to each API POST sent with an Idempotency-Key, per
-- user, kept for a day: the same request again with the same key gets
-- that answer instead of being done twice. A row without a status is a
-- request still running (or one that died: it may be claimed again after
-- five minutes).
CREATE TABLE api_idempotency (
    user_id      BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status       INT,
    content_type TEXT NOT NULL DEFAULT '',
    location     TEXT NOT NULL DEFAULT '',
    body         BYTEA,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, key)
);

CREATE INDEX api_idempotency_created_idx ON api_idempotency (created_at);

---- create above / drop below ----

DROP TABLE api_idempotency;
