-- API keys for the JSON API. A key is "kbn_<8-character id>_<32-character
-- secret>"; the user sees it once, at creation. Only its prefix ("kbn_" and
-- the id, which finds the row and is shown in lists) and a SHA-256 of the
-- whole key are stored: the secret is long and random, so a fast hash is
-- enough.
CREATE TABLE api_keys (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id      BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    secret_hash  TEXT NOT NULL,
    expires_at   TIMESTAMPTZ,
    last_used_at TIMESTAMPTZ,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at   TIMESTAMPTZ
);

CREATE UNIQUE INDEX api_keys_prefix_key ON api_keys (prefix);
CREATE INDEX api_keys_user_idx ON api_keys (user_id, id DESC);

---- create above / drop below ----

DROP TABLE api_keys;
