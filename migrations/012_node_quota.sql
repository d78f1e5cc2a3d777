-- Node quota: when enabled, a ValidatingWebhookConfiguration in the
-- cluster's virtual control plane asks the platform before each Node is
-- created. The webhook URL carries a per-cluster secret (the apiserver
-- presents no credential of its own), kept sealed with the platform key
-- so the sync job can write the URL again.
ALTER TABLE clusters ADD COLUMN node_quota_enabled BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE clusters ADD COLUMN node_quota_secret TEXT NOT NULL DEFAULT '';

---- create above / drop below ----

ALTER TABLE clusters DROP COLUMN node_quota_secret;
ALTER TABLE clusters DROP COLUMN node_quota_enabled;
