-- name: ApiKeyCreate :one
-- A prefix already taken (the id part is random) inserts nothing, and the
-- caller tries another.
-- The key acts in the organization org_id, of which the user is a member
-- (apikeys.Create checks it first).
INSERT INTO api_keys (user_id, org_id, name, prefix, secret_hash, expires_at, scope)
VALUES (@user_id, @org_id, @name, @prefix, @secret_hash, @expires_at, @scope)
ON CONFLICT (prefix) DO NOTHING
RETURNING *;

-- name: ApiKeyListByUser :many
SELECT * FROM api_keys WHERE user_id = @user_id ORDER BY id DESC;

-- name: ApiKeyPageByUser :many
-- A user's keys, newest first, paged by id (keyset: ids below @before_id,
-- 0 for the first page).
SELECT * FROM api_keys
WHERE user_id = @user_id AND (@before_id::bigint = 0 OR id < @before_id)
ORDER BY id DESC LIMIT @max_rows;

-- name: ApiKeyGetByUser :one
SELECT * FROM api_keys WHERE id = @id AND user_id = @user_id;

-- name: ApiKeyRevoke :one
UPDATE api_keys SET revoked_at = @now
WHERE id = @id AND user_id = @user_id AND revoked_at IS NULL
RETURNING *;

-- name: ApiKeyAuthenticate :one
-- The key with this prefix, its owner, and the owner's role in the key's
-- organization ("" when they are no longer a member); the caller checks
-- the hash, revocation, expiry, the membership and the account's state.
SELECT sqlc.embed(api_keys), sqlc.embed(users), coalesce(m.role, '')::text AS org_role
FROM api_keys
JOIN users ON users.id = api_keys.user_id
LEFT JOIN organization_members m ON m.org_id = api_keys.org_id AND m.user_id = api_keys.user_id
WHERE api_keys.prefix = @prefix;

-- name: ApiKeyTouch :exec
UPDATE api_keys SET last_used_at = @now, last_used_ip = @ip WHERE id = @id;

-- name: ApiKeyRevokeAllForUser :execrows
-- Disabling an account ends its keys for good: enabling it again must not
-- bring them back.
UPDATE api_keys SET revoked_at = now()
WHERE user_id = @user_id AND revoked_at IS NULL;

-- name: ApiKeyRevokeForMember :execrows
-- A member who leaves an organization (or is removed) loses their keys
-- in it for good: joining again must not bring them back.
UPDATE api_keys SET revoked_at = now()
WHERE org_id = @org_id AND user_id = @user_id AND revoked_at IS NULL;
