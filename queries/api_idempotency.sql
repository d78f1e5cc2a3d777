-- name: IdempotencyClaim :one
-- Claims the key for a request: a key not used yet, or one whose answer
-- is more than a day old, or whose request died (running for more than
-- five minutes). Nothing is returned when the key is held.
INSERT INTO api_idempotency (user_id, key, request_hash)
VALUES (@user_id, @key, @request_hash)
ON CONFLICT (user_id, key) DO UPDATE
SET request_hash = EXCLUDED.request_hash, status = NULL, content_type = '', location = '', body = NULL, created_at = now()
WHERE api_idempotency.created_at < now() - interval '24 hours'
   OR (api_idempotency.status IS NULL AND api_idempotency.created_at < now() - interval '5 minutes')
RETURNING created_at;

-- name: IdempotencyGet :one
SELECT * FROM api_idempotency WHERE user_id = @user_id AND key = @key;

-- name: IdempotencyFinish :exec
UPDATE api_idempotency
SET status = @status, content_type = @content_type, location = @location, body = @body
WHERE user_id = @user_id AND key = @key AND request_hash = @request_hash AND status IS NULL;

-- name: IdempotencyRelease :exec
-- Lets the key be used again: the request failed on the server's side.
DELETE FROM api_idempotency
WHERE user_id = @user_id AND key = @key AND request_hash = @request_hash AND status IS NULL;

-- name: IdempotencyDeleteOld :execrows
DELETE FROM api_idempotency WHERE created_at < now() - interval '24 hours';
