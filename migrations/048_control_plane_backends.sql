-- Control-plane backends (issue 34): each cluster runs on the backend it
-- was made with, vcluster (Helm chart, private nodes, licensed) or kamaji
-- (a TenantControlPlane of the open Kamaji operator), whatever the
-- platform's default becomes later. A plan may limit its clusters to some
-- backends; an empty list means the platform's default one.
ALTER TABLE clusters
    ADD COLUMN backend TEXT NOT NULL DEFAULT 'vcluster',
    ADD CONSTRAINT clusters_backend_known CHECK (backend IN ('vcluster', 'kamaji'));

ALTER TABLE plans
    ADD COLUMN backends TEXT[] NOT NULL DEFAULT '{}',
    ADD CONSTRAINT plans_backends_known CHECK (backends <@ ARRAY['vcluster', 'kamaji']::TEXT[]);

---- create above / drop below ----

ALTER TABLE plans DROP CONSTRAINT plans_backends_known, DROP COLUMN backends;
ALTER TABLE clusters DROP CONSTRAINT clusters_backend_known, DROP COLUMN backend;
