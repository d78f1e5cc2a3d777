-- A signed-in browser's session row names its user session, so that one
-- query reads the session and the signed-in user behind it (every page
-- read them one after the other). The store sets it on every save; rows
-- saved before get it at their next save (within a minute of use), and
-- until then are read the old way.
ALTER TABLE sessions ADD COLUMN user_session_id TEXT;

-- The unread count in every page's header counts only unread rows.
CREATE INDEX notifications_unread_idx ON notifications (user_id) WHERE read_at IS NULL;

---- create above / drop below ----

DROP INDEX notifications_unread_idx;
ALTER TABLE sessions DROP COLUMN user_session_id;
