-- The platform's logo (admin branding settings): one row at most, the
-- bytes as uploaded (PNG, WebP or SVG, checked by package branding) and a
-- hash of them that versions its URL. The other branding values are a
-- settings row ("branding").
CREATE TABLE branding_logo (
    singleton    BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    image        BYTEA NOT NULL,
    content_type TEXT NOT NULL,
    etag         TEXT NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- When the store last saved a session: the idle timeout is an admin
-- setting that can shrink, and a session read is checked against the
-- timeout in force now, not only against the expiry written at its save.
-- NULL for rows saved before, which keep their expiry alone.
ALTER TABLE sessions ADD COLUMN saved_at TIMESTAMPTZ;

---- create above / drop below ----

ALTER TABLE sessions DROP COLUMN saved_at;
DROP TABLE branding_logo;
