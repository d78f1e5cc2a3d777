-- Two-factor authentication with TOTP (issue 40). A user's authenticator
-- secret is sealed with the platform key; the row exists from the start
-- of enrolment, and counts only once a code confirmed it (enabled_at).
-- last_step is the last time step whose code was accepted: a code is
-- never accepted twice.
CREATE TABLE user_totp (
    user_id       BIGINT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret_sealed TEXT NOT NULL,
    enabled_at    TIMESTAMPTZ,
    last_step     BIGINT NOT NULL DEFAULT 0,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Recovery codes sign in once each when the authenticator is lost. Only
-- their keyed hashes are kept.
CREATE TABLE user_recovery_codes (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash  TEXT NOT NULL,
    used_at    TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (user_id, code_hash)
);

---- create above / drop below ----

DROP TABLE user_recovery_codes;
DROP TABLE user_totp;
