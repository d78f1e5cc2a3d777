-- name: SettingGet :one
SELECT * FROM settings WHERE key = @key;

-- name: SettingUpsert :exec
INSERT INTO settings (key, value, secret)
VALUES (@key, @value, @secret)
ON CONFLICT (key) DO UPDATE
SET value = EXCLUDED.value, secret = EXCLUDED.secret, updated_at = now();
