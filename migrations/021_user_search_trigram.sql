-- The admins' user search looks for a substring of the email or the name,
-- in any case (AdminUserSearch): trigram indexes on both, lowercased, find
-- the matches without reading every user. Without fastupdate: a new user
-- goes into the index at once, not into a pending list that every search
-- would read, and the planner count as such, until a vacuum (users are
-- added seldom and searched often).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE INDEX users_email_trgm_idx ON users USING gin (lower(email) gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX users_name_trgm_idx ON users USING gin (lower(name) gin_trgm_ops) WITH (fastupdate = off);

---- create above / drop below ----

DROP INDEX users_name_trgm_idx;
DROP INDEX users_email_trgm_idx;
-- The extension stays: other objects may have come to use it.
