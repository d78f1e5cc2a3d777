-- name: UserSessionCreate :exec
INSERT INTO user_sessions (id, user_id, ip, user_agent)
VALUES (@id, @user_id, @ip, @user_agent);

-- name: UserSessionAuthenticate :one
-- The signed-in user behind a session, if the session and the account are
-- both still active, and the user's unread notifications (for the page's
-- header), and the organization it works in as SessionFindSignedIn reads
-- it: what every signed-in page needs, in one round trip.
SELECT sqlc.embed(users), user_sessions.last_seen_at AS session_last_seen_at,
    (SELECT count(*) FROM notifications
     WHERE notifications.user_id = users.id AND notifications.read_at IS NULL) AS unread,
    org.id AS org_id, org.name AS org_name, org.viewer_kubeconfig AS org_viewer_kubeconfig, org_member.role AS org_role
FROM user_sessions
JOIN users ON users.id = user_sessions.user_id
LEFT JOIN organization_members org_member ON org_member.org_id = user_sessions.org_id AND org_member.user_id = users.id
LEFT JOIN organizations org ON org.id = org_member.org_id
WHERE user_sessions.id = @id
  AND user_sessions.ended_at IS NULL
  AND users.disabled_at IS NULL
  AND users.email_verified_at IS NOT NULL;

-- name: UserSessionTouch :exec
UPDATE user_sessions SET last_seen_at = now() WHERE id = @id;

-- name: UserSessionEnd :exec
UPDATE user_sessions SET ended_at = now() WHERE id = @id AND ended_at IS NULL;

-- name: UserSessionEndAllForUser :execrows
-- Ends every session of a user except, optionally, one (the caller's).
UPDATE user_sessions SET ended_at = now()
WHERE user_id = @user_id AND ended_at IS NULL AND id <> @keep_id;

-- name: UserSessionListActiveByUser :many
SELECT * FROM user_sessions
WHERE user_id = @user_id AND ended_at IS NULL
ORDER BY last_seen_at DESC;

-- name: UserSessionDeleteStale :execrows
-- Sessions ended, or unseen for longer than the absolute session lifetime.
DELETE FROM user_sessions
WHERE (ended_at IS NOT NULL AND ended_at < now() - interval '30 days')
   OR last_seen_at < now() - interval '30 days';

-- name: UserSessionEndForUser :execrows
-- Ends one of a user's sessions, found by its id and its owner: another
-- user's session id ends nothing.
UPDATE user_sessions SET ended_at = now()
WHERE id = @id AND user_id = @user_id AND ended_at IS NULL;

-- name: UserSessionSetOrg :exec
-- Makes @org_id the organization a signed-in browser works in.
UPDATE user_sessions SET org_id = @org_id WHERE id = @id AND user_id = @user_id;
