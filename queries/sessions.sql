-- name: SessionDeleteExpired :execrows
DELETE FROM sessions WHERE expiry < now();

-- The scs session store (handlers.sessionStore). token holds a keyed hash
-- of the cookie's token, never the token itself.

-- name: SessionFind :one
SELECT data FROM sessions WHERE token = @token_hash AND now() < expiry;

-- name: SessionCommit :exec
INSERT INTO sessions (token, data, expiry) VALUES (@token_hash, @data, @expiry)
ON CONFLICT (token) DO UPDATE SET data = EXCLUDED.data, expiry = EXCLUDED.expiry;

-- name: SessionDelete :exec
DELETE FROM sessions WHERE token = @token_hash;
