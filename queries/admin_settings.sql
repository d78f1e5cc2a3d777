-- name: AdminSettingsLock :exec
-- Runs settings changes one after the other (until the transaction ends),
-- so that each audit event lists exactly what its change changed. An
-- advisory lock works before the settings row first exists.
SELECT pg_advisory_xact_lock(hashtext('settings.runtime'));

-- name: AdminSettingsKubeconfigUpload :one
-- When, and by whom, the stored host kubeconfig was uploaded: the audit
-- stream's latest upload.
SELECT created_at, actor_email FROM audit_events
WHERE action = 'admin.settings_update' AND details->>'hostKubeconfig' = 'uploaded'
ORDER BY id DESC
LIMIT 1;
