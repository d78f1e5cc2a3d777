-- name: SessionDeleteExpired :execrows
DELETE FROM sessions WHERE expiry < now();
