-- name: UserTOTPGet :one
SELECT * FROM user_totp WHERE user_id = @user_id;

-- name: UserTOTPStart :one
-- Begins (or keeps) an enrolment: a confirmed secret is never replaced.
INSERT INTO user_totp (user_id, secret_sealed)
VALUES (@user_id, @secret_sealed)
ON CONFLICT (user_id) DO UPDATE SET user_id = EXCLUDED.user_id
RETURNING *;

-- name: UserTOTPEnable :execrows
UPDATE user_totp SET enabled_at = now(), last_step = @step
WHERE user_id = @user_id AND enabled_at IS NULL;

-- name: UserTOTPUseStep :execrows
-- Accepts a code's time step once: a step at or before the last one
-- accepted is a replay.
UPDATE user_totp SET last_step = @step
WHERE user_id = @user_id AND enabled_at IS NOT NULL AND last_step < @step;

-- name: UserTOTPDelete :execrows
DELETE FROM user_totp WHERE user_id = @user_id;

-- name: UserTOTPEnabled :one
-- Whether the user has two-factor authentication, and what the platform
-- requires of them (TwoFactorPolicy), in one round trip.
SELECT
    EXISTS (SELECT 1 FROM user_totp t WHERE t.user_id = @user_id AND t.enabled_at IS NOT NULL) AS enabled,
    coalesce((SELECT s.value ->> 'require' FROM settings s WHERE s.key = 'two_factor'), '')::text AS required;

-- name: UserRecoveryCodesDelete :exec
DELETE FROM user_recovery_codes WHERE user_id = @user_id;

-- name: UserRecoveryCodeCreate :exec
INSERT INTO user_recovery_codes (user_id, code_hash) VALUES (@user_id, @code_hash);

-- name: UserRecoveryCodeUse :execrows
UPDATE user_recovery_codes SET used_at = now()
WHERE user_id = @user_id AND code_hash = @code_hash AND used_at IS NULL;

-- name: UserRecoveryCodesLeft :one
SELECT count(*) FROM user_recovery_codes WHERE user_id = @user_id AND used_at IS NULL;
