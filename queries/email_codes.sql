-- name: EmailCodeCreate :one
INSERT INTO email_codes (user_id, purpose, code_hash, new_email, expires_at)
VALUES (@user_id, @purpose, @code_hash, @new_email, @expires_at)
RETURNING *;

-- name: EmailCodeLatest :one
-- The newest code of a purpose for a user, used or not.
SELECT * FROM email_codes
WHERE user_id = @user_id AND purpose = @purpose
ORDER BY created_at DESC, id DESC
LIMIT 1;

-- name: EmailCodeAddAttempt :one
UPDATE email_codes SET attempts = attempts + 1 WHERE id = @id RETURNING attempts;

-- name: EmailCodeConsume :execrows
UPDATE email_codes SET consumed_at = now() WHERE id = @id AND consumed_at IS NULL;

-- name: EmailCodeConsumeAllForUser :exec
UPDATE email_codes SET consumed_at = now()
WHERE user_id = @user_id AND purpose = @purpose AND consumed_at IS NULL;

-- name: EmailCodeDeleteExpired :execrows
DELETE FROM email_codes WHERE expires_at < now() - interval '1 day';
