-- Profile pictures. The image is the processed one (a 256x256 PNG made by
-- package avatars), never the upload as sent; etag is a hash of it.
CREATE TABLE user_avatars (
    user_id    BIGINT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    image      BYTEA NOT NULL,
    etag       TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

---- create above / drop below ----

DROP TABLE user_avatars;
