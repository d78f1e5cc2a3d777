-- name: SessionDeleteExpired :execrows
DELETE FROM sessions WHERE expiry < now();

-- The scs session store (handlers.sessionStore). token holds a keyed hash
-- of the cookie's token, never the token itself.

-- name: SessionFind :one
-- A live session: before its expiry, and saved within the idle timeout in
-- force now (@idle_seconds), which may be shorter than when it was saved.
SELECT data FROM sessions WHERE token = @token_hash AND now() < expiry
  AND (saved_at IS NULL OR saved_at > now() - make_interval(secs => @idle_seconds::bigint));

-- name: SessionCommit :exec
-- Saves a session; user_session_id is the user session its data names
-- (NULL when it names none).
INSERT INTO sessions (token, data, expiry, user_session_id, saved_at) VALUES (@token_hash, @data, @expiry, @user_session_id, now())
ON CONFLICT (token) DO UPDATE SET data = EXCLUDED.data, expiry = EXCLUDED.expiry, user_session_id = EXCLUDED.user_session_id, saved_at = EXCLUDED.saved_at;

-- name: SessionFindSignedIn :one
-- A session with the signed-in user behind it, if both are still active,
-- the user's unread notifications, whether they have two-factor
-- authentication and what the platform requires of whom (as
-- UserTOTPEnabled), and the organization the console works in with the
-- user's role in it while they are a member (else NULL): what every
-- signed-in page needs, in one query. Live as SessionFind says. No row
-- for a session that names no user session (or one that ended, or a
-- disabled account): the caller then reads the session alone
-- (SessionFind).
SELECT sessions.data, user_sessions.id AS user_session_id, sqlc.embed(users),
    user_sessions.last_seen_at AS session_last_seen_at,
    (SELECT count(*) FROM notifications
     WHERE notifications.user_id = users.id AND notifications.read_at IS NULL) AS unread,
    EXISTS (SELECT 1 FROM user_totp t WHERE t.user_id = users.id AND t.enabled_at IS NOT NULL) AS two_factor_enabled,
    coalesce((SELECT s.value ->> 'require' FROM settings s WHERE s.key = 'two_factor'), '')::text AS two_factor_required,
    org.id AS org_id, org.name AS org_name, org.viewer_kubeconfig AS org_viewer_kubeconfig, org_member.role AS org_role
FROM sessions
JOIN user_sessions ON user_sessions.id = sessions.user_session_id
JOIN users ON users.id = user_sessions.user_id
LEFT JOIN organization_members org_member ON org_member.org_id = user_sessions.org_id AND org_member.user_id = users.id
LEFT JOIN organizations org ON org.id = org_member.org_id
WHERE sessions.token = @token_hash AND now() < sessions.expiry
  AND (sessions.saved_at IS NULL OR sessions.saved_at > now() - make_interval(secs => @idle_seconds::bigint))
  AND user_sessions.ended_at IS NULL
  AND users.disabled_at IS NULL
  AND users.email_verified_at IS NOT NULL;

-- name: SessionDelete :exec
DELETE FROM sessions WHERE token = @token_hash;
