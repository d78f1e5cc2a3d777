-- The admins' organization list (AdminOrgSearch) searches a substring of
-- an organization's name, in any case, or of a member's email (through
-- users_email_trgm_idx, 021): a trigram index on the lowercased name finds
-- the matching organizations without reading all of them; without
-- fastupdate, as the other search indexes.
CREATE INDEX organizations_name_trgm_idx ON organizations USING gin (lower(name) gin_trgm_ops) WITH (fastupdate = off);

---- create above / drop below ----

DROP INDEX organizations_name_trgm_idx;
