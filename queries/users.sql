-- name: AdminUserList :many
-- Every user, keyset-paginated by id, with what the admins' list shows.
SELECT id, email, name, role, email_verified_at, disabled_at, created_at, last_sign_in_at FROM users
WHERE id > @after_id::bigint
ORDER BY id
LIMIT @row_limit;

-- name: AdminUserSearch :many
-- The users whose email or name holds the search, in any case, keyset-
-- paginated by id. @pattern is the search with \, % and _
-- escaped, between two %: what the admin typed is never a wildcard. The
-- matches are found first, through the trigram indexes on lower(email) and
-- lower(name); only they are sorted.
WITH matches AS MATERIALIZED (
    SELECT users.id FROM users
    WHERE lower(users.email) LIKE lower(@pattern::text) OR lower(users.name) LIKE lower(@pattern::text)
)
SELECT id, email, name, role, email_verified_at, disabled_at, created_at, last_sign_in_at FROM users
WHERE id IN (SELECT matches.id FROM matches) AND id > @after_id::bigint
ORDER BY id
LIMIT @row_limit;

-- name: AdminUserListSorted :many
-- The users (those matching @pattern, when it is set, as AdminUserSearch)
-- in the order of the column the admin chose (@sort_key: email, name,
-- role, created or last_sign_in; @descending; never signed in last), a
-- page at @row_offset.
WITH matches AS MATERIALIZED (
    SELECT users.id FROM users
    WHERE @pattern::text <> '' AND (lower(users.email) LIKE lower(@pattern::text) OR lower(users.name) LIKE lower(@pattern::text))
)
SELECT id, email, name, role, email_verified_at, disabled_at, created_at, last_sign_in_at FROM users
WHERE @pattern::text = '' OR id IN (SELECT matches.id FROM matches)
ORDER BY
  CASE WHEN NOT @descending::bool THEN CASE @sort_key::text WHEN 'email' THEN lower(email) WHEN 'name' THEN lower(name) WHEN 'role' THEN role END END,
  CASE WHEN @descending::bool THEN CASE @sort_key::text WHEN 'email' THEN lower(email) WHEN 'name' THEN lower(name) WHEN 'role' THEN role END END DESC,
  CASE WHEN NOT @descending::bool THEN CASE @sort_key::text WHEN 'created' THEN created_at WHEN 'last_sign_in' THEN last_sign_in_at END END NULLS LAST,
  CASE WHEN @descending::bool THEN CASE @sort_key::text WHEN 'created' THEN created_at WHEN 'last_sign_in' THEN last_sign_in_at END END DESC NULLS LAST,
  id
LIMIT @row_limit OFFSET @row_offset;

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

-- name: UserCreateFromIdentity :one
-- An account made by signing in with a provider that vouched for the email:
-- verified from the start, without a password. Its language follows the
-- browser until its owner picks one.
INSERT INTO users (email, name, email_verified_at)
VALUES (@email, @name, now())
RETURNING *;

-- name: UserClaimUnverified :one
-- A provider vouched for the email of an account nobody verified. Whoever
-- signed up with it never proved the address was theirs, so their name and
-- password go: the account becomes the provider's verified person's.
UPDATE users
SET name = @name, password_hash = NULL, language = '',
    email_verified_at = now(), updated_at = now()
WHERE id = @id AND email_verified_at IS NULL
RETURNING *;

-- name: UserUpdateProfile :one
UPDATE users SET name = @name, language = @language, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: UserSetEmail :one
-- The unique index on lower(email) refuses an address another account has.
UPDATE users SET email = @email, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: UserCreate :one
INSERT INTO users (email, name, password_hash, role, email_verified_at)
VALUES (@email, @name, @password_hash, @role, @email_verified_at)
RETURNING *;

-- name: UserGetByEmail :one
SELECT * FROM users WHERE lower(email) = lower(@email);

-- name: UserSetRoleByEmail :one
UPDATE users SET role = @role, updated_at = now()
WHERE lower(email) = lower(@email)
RETURNING *;

-- name: UserGetByID :one
SELECT * FROM users WHERE id = @id;

-- name: UserCreateUnverified :one
-- The account's language follows the browser until its owner picks one.
INSERT INTO users (email, name, password_hash)
VALUES (@email, @name, @password_hash)
RETURNING *;

-- name: UserUpdateUnverified :one
-- Sign-up again with the same email before verifying: take the new details.
UPDATE users SET name = @name, password_hash = @password_hash, updated_at = now()
WHERE id = @id AND email_verified_at IS NULL
RETURNING *;

-- name: UserMarkVerified :exec
UPDATE users SET email_verified_at = now(), updated_at = now()
WHERE id = @id AND email_verified_at IS NULL;

-- name: UserRecordSignIn :exec
UPDATE users SET last_sign_in_at = now() WHERE id = @id;

-- name: UserSetPassword :exec
-- A password the user set: one they were given no longer needs changing.
UPDATE users SET password_hash = @password_hash, password_change_required = FALSE, updated_at = now() WHERE id = @id;

-- name: UserRequirePasswordChange :exec
-- The user's password was given to them: they set their own at the next
-- sign-in.
UPDATE users SET password_change_required = TRUE, updated_at = now() WHERE id = @id;

-- name: UserLockByID :one
-- Holds the user's row while a change that must see all of it is made.
SELECT * FROM users WHERE id = @id FOR UPDATE;

-- name: AdminUserCountOrders :one
-- Orders are kept for accounting: an account that placed any, or whose
-- personal organization (deleted with it) has any, cannot be deleted.
SELECT count(*) FROM orders
WHERE user_id = @user_id OR org_id = (SELECT o.id FROM organizations o WHERE o.personal_of = @user_id);

-- name: AdminUserPurgeDeletedClusters :execrows
-- The rows left of the deleted clusters an account made, or that are in
-- an organization that goes with it (AdminUserOrgsGoing), which would
-- block deleting them (clusters.owner_id and org_id have no ON DELETE).
DELETE FROM clusters
WHERE status = 'deleted' AND (owner_id = @owner_id OR org_id = ANY(@org_ids::bigint[]));

-- name: AdminUserOrgsGoing :many
-- The organizations that go with an account: its personal one, and the
-- teams of which it is the only member.
SELECT o.id FROM organizations o
WHERE o.personal_of = @user_id::bigint
   OR (o.personal_of IS NULL
       AND EXISTS (SELECT 1 FROM organization_members m WHERE m.org_id = o.id AND m.user_id = @user_id)
       AND NOT EXISTS (SELECT 1 FROM organization_members m WHERE m.org_id = o.id AND m.user_id <> @user_id));

-- name: AdminUserSoleOwnerships :one
-- How many teams with other members the account is the only owner of:
-- deleting it would leave them without one.
SELECT count(*) FROM organizations o
WHERE o.personal_of IS NULL
  AND EXISTS (SELECT 1 FROM organization_members m WHERE m.org_id = o.id AND m.user_id = @user_id AND m.role = 'owner')
  AND NOT EXISTS (SELECT 1 FROM organization_members m WHERE m.org_id = o.id AND m.user_id <> @user_id AND m.role = 'owner')
  AND EXISTS (SELECT 1 FROM organization_members m WHERE m.org_id = o.id AND m.user_id <> @user_id);

-- name: ClusterCountActiveInOrgs :one
SELECT count(*) FROM clusters WHERE org_id = ANY(@org_ids::bigint[]) AND status <> 'deleted';

-- name: AdminUserDeleteOrgs :exec
-- The team organizations that go with an account (its personal one goes
-- with its row).
DELETE FROM organizations WHERE id = ANY(@org_ids::bigint[]) AND personal_of IS NULL;

-- name: AdminUserDelete :execrows
DELETE FROM users WHERE id = @id;

-- name: AdminUserClusterList :many
-- An account's clusters as its admin page shows them, newest first,
-- deleted ones left out.
SELECT c.id, c.name, c.status, c.kubernetes_version, c.created_at,
       (SELECT count(*) FROM nodes n WHERE n.cluster_id = c.id)::bigint AS nodes
FROM clusters c
WHERE c.owner_id = @owner_id AND c.status <> 'deleted'
ORDER BY c.id DESC
LIMIT @row_limit;
