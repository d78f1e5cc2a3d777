-- name: RateLimitHit :one
-- Counts one hit in the key's current window and returns the count so far,
-- with the count of the window before it.
WITH hit AS (
  INSERT INTO rate_limits (key, window_start, count)
  VALUES (@key, @window_start, 1)
  ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limits.count + 1
  RETURNING count
)
SELECT hit.count::int AS count,
  coalesce((SELECT rate_limits.count FROM rate_limits WHERE rate_limits.key = @key AND rate_limits.window_start = @previous_start), 0)::int AS previous
FROM hit;

-- name: RateLimitReset :exec
DELETE FROM rate_limits WHERE key = @key;

-- name: RateLimitDeleteOld :execrows
DELETE FROM rate_limits WHERE window_start < now() - interval '1 day';

-- name: RateLimitAdd :one
-- Counts hits in the key's current window (ratelimit.Limiter's batches)
-- and late hits in the window before it, and returns both windows' counts.
WITH late AS (
  INSERT INTO rate_limits (key, window_start, count)
  SELECT @key, @previous_start, @previous_hits::int
  WHERE @previous_hits::int > 0
  ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limits.count + excluded.count
  RETURNING count
), hit AS (
  INSERT INTO rate_limits (key, window_start, count)
  VALUES (@key, @window_start, @hits::int)
  ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limits.count + excluded.count
  RETURNING count
)
SELECT hit.count::int AS count,
  coalesce((SELECT late.count FROM late),
    (SELECT rate_limits.count FROM rate_limits WHERE rate_limits.key = @key AND rate_limits.window_start = @previous_start), 0)::int AS previous
FROM hit;
