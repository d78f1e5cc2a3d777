-- Invitations to register, sent by admins (internal/signup). The token
-- is in the emailed link only: the row keeps its HMAC, as email codes and
-- join tokens do. An invitation is pending until it is accepted (once),
-- revoked, or past expires_at; resending gives it a new token and expiry.
CREATE TABLE invitations (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email            TEXT NOT NULL,
    token_hash       TEXT NOT NULL,
    invited_by       BIGINT REFERENCES users (id) ON DELETE SET NULL,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    sent_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at       TIMESTAMPTZ NOT NULL,
    accepted_at      TIMESTAMPTZ,
    accepted_user_id BIGINT REFERENCES users (id) ON DELETE SET NULL,
    revoked_at       TIMESTAMPTZ
);

CREATE UNIQUE INDEX invitations_token_hash_key ON invitations (token_hash);
-- A sign-up under invite-only, or with a provider, looks for the open
-- invitation of its address.
CREATE INDEX invitations_email_idx ON invitations (lower(email)) WHERE accepted_at IS NULL AND revoked_at IS NULL;

---- create above / drop below ----

DROP TABLE invitations;
