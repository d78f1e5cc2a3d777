-- Accounts at GitHub and Google that sign in to a user. subject is the
-- provider's stable id for the person (GitHub's numeric user id, the OpenID
-- Connect "sub"), never the email, which people change; email is the
-- verified address the provider gave when the identity was linked.
CREATE TABLE oauth_identities (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider   TEXT NOT NULL,
    subject    TEXT NOT NULL,
    email      TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (provider, subject)
);

CREATE INDEX oauth_identities_user_idx ON oauth_identities (user_id);

---- create above / drop below ----

DROP TABLE oauth_identities;
