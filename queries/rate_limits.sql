-- name: RateLimitHit :one
-- Counts one hit in the key's current window and returns the count so far.
INSERT INTO rate_limits (key, window_start, count)
VALUES (@key, @window_start, 1)
ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limits.count + 1
RETURNING count;

-- name: RateLimitReset :exec
DELETE FROM rate_limits WHERE key = @key;

-- name: RateLimitDeleteOld :execrows
DELETE FROM rate_limits WHERE window_start < now() - interval '1 day';
