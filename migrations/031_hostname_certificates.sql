-- Each host name's certificate (package ingress), as cert-manager in the
-- virtual cluster last said: cert_state ready, issuing or error ('' none
-- yet), cert_not_after its expiry, cert_error cert-manager's message.
ALTER TABLE cluster_hostnames
    ADD COLUMN cert_state     TEXT NOT NULL DEFAULT '',
    ADD COLUMN cert_not_after TIMESTAMPTZ,
    ADD COLUMN cert_error     TEXT NOT NULL DEFAULT '',
    -- When the owner was told the certificate is close to its expiry
    -- (once per expiry).
    ADD COLUMN cert_warned_at TIMESTAMPTZ;

---- create above / drop below ----

ALTER TABLE cluster_hostnames DROP COLUMN cert_state, DROP COLUMN cert_not_after, DROP COLUMN cert_error, DROP COLUMN cert_warned_at;
