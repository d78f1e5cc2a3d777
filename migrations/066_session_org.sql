-- The organization a signed-in browser works in (issue 36): kept on its
-- user session, so that the session query, which every signed-in page
-- makes, reads the member's role in it too, and an organization page
-- needs no query of its own for it. It was a value in the scs session's
-- data, which only Go can read. NULL until the console has chosen one, or
-- once the organization is gone; a member removed from it is not matched
-- by the session query, and the console falls back to their personal one.
ALTER TABLE user_sessions ADD COLUMN org_id BIGINT REFERENCES organizations (id) ON DELETE SET NULL;

---- create above / drop below ----

ALTER TABLE user_sessions DROP COLUMN org_id;
