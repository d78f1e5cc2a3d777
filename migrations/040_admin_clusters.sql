-- The admins' cluster list (AdminClusterListOlder, AdminClusterListNewer)
-- searches a substring of the name or the slug, in any case, as the user
-- search does (021): trigram indexes on both, lowercased, find the matches
-- without reading every cluster; without fastupdate for the same reason.
-- A status filter reads (status, id) backwards from its cursor; the owner
-- filter has clusters_owner_idx (008), for clusters that are not deleted.
CREATE INDEX clusters_name_trgm_idx ON clusters USING gin (lower(name) gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX clusters_slug_trgm_idx ON clusters USING gin (lower(slug) gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX clusters_status_idx ON clusters (status, id);

---- create above / drop below ----

DROP INDEX clusters_status_idx;
DROP INDEX clusters_slug_trgm_idx;
DROP INDEX clusters_name_trgm_idx;
