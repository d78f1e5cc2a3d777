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

-- name: OAuthIdentityListByUser :many
SELECT * FROM oauth_identities WHERE user_id = @user_id ORDER BY provider, id;

-- name: OAuthIdentityDelete :execrows
DELETE FROM oauth_identities WHERE id = @id AND user_id = @user_id;
