-- Accounts: what sign-up, sign-in, sessions, codes, audit and rate limits
-- need. OAuth identities, API keys, avatars and notification preferences
-- come in later migrations of their own.

ALTER TABLE users
    ADD COLUMN language        TEXT NOT NULL DEFAULT '',
    ADD COLUMN last_sign_in_at TIMESTAMPTZ;

-- A signed-in browser. The scs session (cookie) holds this row's id; ending
-- the row ends the session on the next request, whatever replica serves it.
CREATE TABLE user_sessions (
    id           TEXT PRIMARY KEY,
    user_id      BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    ip           TEXT NOT NULL DEFAULT '',
    user_agent   TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_seen_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    ended_at     TIMESTAMPTZ
);

CREATE INDEX user_sessions_user_idx ON user_sessions (user_id) WHERE ended_at IS NULL;

-- One-time codes sent by email. Only an HMAC of the code (keyed with the
-- platform secret) is stored.
CREATE TABLE email_codes (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose     TEXT NOT NULL CHECK (purpose IN ('signup', 'email_change', 'password_reset')),
    code_hash   TEXT NOT NULL,
    new_email   TEXT NOT NULL DEFAULT '',
    attempts    INT NOT NULL DEFAULT 0,
    expires_at  TIMESTAMPTZ NOT NULL,
    consumed_at TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX email_codes_user_purpose_idx ON email_codes (user_id, purpose, created_at DESC);

-- Every state-changing action, written in the same transaction as the change.
CREATE TABLE audit_events (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    actor_id    BIGINT REFERENCES users (id) ON DELETE SET NULL,
    actor_email TEXT NOT NULL DEFAULT '',
    action      TEXT NOT NULL,
    target_type TEXT NOT NULL DEFAULT '',
    target_id   TEXT NOT NULL DEFAULT '',
    ip          TEXT NOT NULL DEFAULT '',
    user_agent  TEXT NOT NULL DEFAULT '',
    details     JSONB NOT NULL DEFAULT '{}',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX audit_events_actor_idx ON audit_events (actor_id, id DESC);
CREATE INDEX audit_events_action_idx ON audit_events (action, id DESC);

-- Fixed-window rate-limit counters, shared by every replica.
CREATE TABLE rate_limits (
    key          TEXT NOT NULL,
    window_start TIMESTAMPTZ NOT NULL,
    count        INT NOT NULL,
    PRIMARY KEY (key, window_start)
);

---- create above / drop below ----

DROP TABLE rate_limits;
DROP TABLE audit_events;
DROP TABLE email_codes;
DROP TABLE user_sessions;
ALTER TABLE users DROP COLUMN last_sign_in_at, DROP COLUMN language;
