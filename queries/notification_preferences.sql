-- name: NotificationPreferenceList :many
SELECT * FROM notification_preferences WHERE user_id = @user_id;

-- name: NotificationPreferenceGet :one
SELECT enabled FROM notification_preferences
WHERE user_id = @user_id AND kind = @kind AND channel = @channel;

-- name: NotificationPreferenceSet :exec
INSERT INTO notification_preferences (user_id, kind, channel, enabled)
VALUES (@user_id, @kind, @channel, @enabled)
ON CONFLICT (user_id, kind, channel) DO UPDATE SET enabled = EXCLUDED.enabled;

-- name: NotificationRecipientList :many
-- The members of an organization in one of @roles, with their choices of
-- @kind in-app and by email (NULL: none made, the default applies): who
-- hears of an event of the organization's clusters (notify.TellCluster).
SELECT sqlc.embed(u), pi.enabled AS in_app, pe.enabled AS by_email
FROM organization_members m
JOIN users u ON u.id = m.user_id
LEFT JOIN notification_preferences pi ON pi.user_id = m.user_id AND pi.kind = @kind AND pi.channel = 'in_app'
LEFT JOIN notification_preferences pe ON pe.user_id = m.user_id AND pe.kind = @kind AND pe.channel = 'email'
WHERE m.org_id = @org_id AND m.role = ANY (@roles::text[])
ORDER BY m.user_id;
