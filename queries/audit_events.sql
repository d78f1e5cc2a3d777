-- name: AdminSettingsKubeconfigUpload :one
-- When, and by whom, the stored host kubeconfig was uploaded: the audit
-- stream's latest upload.
SELECT created_at, actor_email FROM audit_events
WHERE action = 'admin.settings_update' AND details->>'hostKubeconfig' = 'uploaded'
ORDER BY id DESC
LIMIT 1;

-- name: AuditEventCreate :exec
INSERT INTO audit_events (actor_id, actor_email, action, target_type, target_id, ip, user_agent, details)
VALUES (@actor_id, @actor_email, @action, @target_type, @target_id, @ip, @user_agent, @details);

-- name: AuditEventList :many
-- Newest first, keyset-paginated by id; empty filters match everything.
SELECT * FROM audit_events
WHERE (@before_id::bigint = 0 OR id < @before_id::bigint)
  AND (@actor::text = '' OR strpos(lower(actor_email), lower(@actor::text)) > 0)
  AND (@action::text = '' OR action = @action::text)
ORDER BY id DESC
LIMIT @row_limit;

-- name: AuditEventListByActor :many
SELECT * FROM audit_events WHERE actor_id = @actor_id ORDER BY id DESC LIMIT @row_limit;
