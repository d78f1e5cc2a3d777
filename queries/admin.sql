-- name: AdminUserList :many
-- Keyset-paginated by id. An empty search matches everyone; otherwise a
-- case-insensitive substring of the email or the name (strpos, so that
-- % and _ typed by the admin are not wildcards).
SELECT * FROM users
WHERE id > @after_id::bigint
  AND (@search::text = ''
       OR strpos(lower(email), lower(@search::text)) > 0
       OR strpos(lower(name), lower(@search::text)) > 0)
ORDER BY id
LIMIT @row_limit;

-- name: AdminUserLockForUpdate :many
-- The acting admin and the target, locked in id order, so that concurrent
-- admin actions on the same accounts run one after the other.
SELECT * FROM users
WHERE id = ANY(@ids::bigint[])
ORDER BY id
FOR UPDATE;

-- name: AdminUserDisable :exec
UPDATE users SET disabled_at = now(), updated_at = now()
WHERE id = @id AND disabled_at IS NULL;

-- name: AdminUserEnable :exec
UPDATE users SET disabled_at = NULL, updated_at = now()
WHERE id = @id AND disabled_at IS NOT NULL;

-- name: AdminUserSetRole :exec
UPDATE users SET role = @role, updated_at = now()
WHERE id = @id;
