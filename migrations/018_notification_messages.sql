-- Notifications are stored as a message of the catalog and its parameters,
-- and worded in the reader's language when shown. Rows written before keep
-- their title and body, in the language they were written in.
ALTER TABLE notifications
    ADD COLUMN message TEXT NOT NULL DEFAULT '',
    ADD COLUMN params JSONB NOT NULL DEFAULT '{}';
ALTER TABLE notifications ALTER COLUMN title SET DEFAULT '';

---- create above / drop below ----

ALTER TABLE notifications ALTER COLUMN title DROP DEFAULT;
ALTER TABLE notifications DROP COLUMN params, DROP COLUMN message;
