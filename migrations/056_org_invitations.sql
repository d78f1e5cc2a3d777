-- Invitations to join an organization in a role, sent by its owners and
-- admins (internal/orgs). The token is in the emailed link only; the row
-- keeps its HMAC. An invitation is pending until it is accepted (once, by
-- the account with its address, signed in or signed up), revoked, or
-- past expires_at. Inviting an address again revokes its pending one.
CREATE TABLE org_invitations (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id           BIGINT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    email            TEXT NOT NULL,
    role             TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    token_hash       TEXT NOT NULL,
    invited_by       BIGINT REFERENCES users (id) ON DELETE SET NULL,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at       TIMESTAMPTZ NOT NULL,
    accepted_at      TIMESTAMPTZ,
    accepted_user_id BIGINT REFERENCES users (id) ON DELETE SET NULL,
    revoked_at       TIMESTAMPTZ
);

CREATE UNIQUE INDEX org_invitations_token_hash_key ON org_invitations (token_hash);
CREATE INDEX org_invitations_org_idx ON org_invitations (org_id, id DESC);

---- create above / drop below ----

DROP TABLE org_invitations;
