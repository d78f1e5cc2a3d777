-- Sessions are now stored under a keyed hash of their token (HMAC with a key
-- derived from KUBEBYON_SECRET_KEY), which SQL cannot compute: the sessions
-- stored under plain tokens are deleted, and everyone signs in again.
DELETE FROM sessions;
UPDATE user_sessions SET ended_at = now() WHERE ended_at IS NULL;

COMMENT ON COLUMN sessions.token IS 'HMAC-SHA256 of the session token (secrets.Box.MAC), never the token';

---- create above / drop below ----

-- Hashed tokens cannot be turned back into tokens: nothing to undo.
