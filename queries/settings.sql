-- name: AdminSettingsLock :exec
-- Runs settings changes one after the other (until the transaction ends),
-- so that each audit event lists exactly what its change changed. An
-- advisory lock works before the settings row first exists.
SELECT pg_advisory_xact_lock(hashtext('settings.runtime'));

-- name: SettingGet :one
SELECT * FROM settings WHERE key = @key;

-- name: SettingUpsert :exec
INSERT INTO settings (key, value, secret)
VALUES (@key, @value, @secret)
ON CONFLICT (key) DO UPDATE
SET value = EXCLUDED.value, secret = EXCLUDED.secret, updated_at = now();
