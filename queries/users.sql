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
UPDATE users SET password_hash = @password_hash, updated_at = now() WHERE id = @id;

-- name: UserLockByID :one
-- Holds the user's row while a change that must see all of it is made.
SELECT * FROM users WHERE id = @id FOR UPDATE;
