-- name: OAuthIdentityGetUser :one
-- The account an identity signs in to.
SELECT users.* FROM oauth_identities
JOIN users ON users.id = oauth_identities.user_id
WHERE oauth_identities.provider = @provider AND oauth_identities.subject = @subject;

-- name: OAuthIdentityCreate :exec
INSERT INTO oauth_identities (user_id, provider, subject, email)
VALUES (@user_id, @provider, @subject, @email);

-- name: OAuthIdentityListProvidersByUser :many
SELECT DISTINCT provider FROM oauth_identities WHERE user_id = @user_id ORDER BY provider;

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

-- name: OAuthIdentityListByUser :many
SELECT * FROM oauth_identities WHERE user_id = @user_id ORDER BY provider, id;

-- name: OAuthIdentityDelete :execrows
DELETE FROM oauth_identities WHERE id = @id AND user_id = @user_id;
