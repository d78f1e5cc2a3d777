-- What an API key may do: read (GET only), write (everything its owner
-- may do in /api/v1) or admin (also /api/v1/admin, for admins only).
-- Keys made before had their owner's full rights: they are write keys.
-- And the address a key was last used from, shown with the time.
ALTER TABLE api_keys
    ADD COLUMN scope TEXT NOT NULL DEFAULT 'write' CHECK (scope IN ('read', 'write', 'admin')),
    ADD COLUMN last_used_ip TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ALTER COLUMN scope DROP DEFAULT;

---- create above / drop below ----

ALTER TABLE api_keys DROP COLUMN scope, DROP COLUMN last_used_ip;
