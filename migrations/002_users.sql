CREATE TABLE users (
    id                BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email             TEXT NOT NULL,
    name              TEXT NOT NULL DEFAULT '',
    password_hash     TEXT,
    role              TEXT NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'admin')),
    email_verified_at TIMESTAMPTZ,
    disabled_at       TIMESTAMPTZ,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Emails are compared case-insensitively everywhere.
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

---- create above / drop below ----

DROP TABLE users;
