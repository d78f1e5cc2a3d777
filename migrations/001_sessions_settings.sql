-- Sessions for alexedwards/scs (pgxstore layout). Expired rows are removed by
-- the SessionCleanup River job, so the store's own cleanup goroutine stays off.
CREATE TABLE sessions (
    token  TEXT PRIMARY KEY,
    data   BYTEA NOT NULL,
    expiry TIMESTAMPTZ NOT NULL
);

CREATE INDEX sessions_expiry_idx ON sessions (expiry);

-- Platform settings edited by admins. Values are JSON; secret values are
-- encrypted with KUBEBYON_SECRET_KEY before they are stored.
CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      JSONB NOT NULL,
    secret     BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

---- create above / drop below ----

DROP TABLE settings;
DROP TABLE sessions;
