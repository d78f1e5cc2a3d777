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
