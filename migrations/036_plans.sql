-- Plans as admins define them (issue 14, package billing): names and
-- descriptions in both languages, the limits a plan allows, its prices
-- per period in integer minor units of one ISO 4217 currency (never
-- floats), whether users may pick it, its place in lists, and archiving
-- (a plan is never deleted: subscribers keep an archived one, nobody new
-- gets it). The default (free) plan cannot be archived.
ALTER TABLE plans
    ADD COLUMN name_zh                   TEXT NOT NULL DEFAULT '',
    ADD COLUMN description_en            TEXT NOT NULL DEFAULT '',
    ADD COLUMN description_zh            TEXT NOT NULL DEFAULT '',
    ADD COLUMN max_hostnames_per_cluster INT NOT NULL DEFAULT 10 CHECK (max_hostnames_per_cluster >= 0),
    ADD COLUMN ingress_allowed           BOOLEAN NOT NULL DEFAULT TRUE,
    ADD COLUMN currency                  TEXT NOT NULL DEFAULT 'USD' CHECK (currency ~ '^[A-Z]{3}$'),
    ADD COLUMN price_monthly             BIGINT NOT NULL DEFAULT 0 CHECK (price_monthly >= 0),
    ADD COLUMN price_yearly              BIGINT NOT NULL DEFAULT 0 CHECK (price_yearly >= 0),
    ADD COLUMN public                    BOOLEAN NOT NULL DEFAULT TRUE,
    ADD COLUMN sort_order                INT NOT NULL DEFAULT 0,
    ADD COLUMN archived_at               TIMESTAMPTZ,
    ADD COLUMN updated_at                TIMESTAMPTZ NOT NULL DEFAULT now(),
    ADD CONSTRAINT plans_default_not_archived CHECK (NOT (is_default AND archived_at IS NOT NULL));

UPDATE plans SET price_monthly = price_cents;
ALTER TABLE plans DROP COLUMN price_cents;

---- create above / drop below ----

ALTER TABLE plans ADD COLUMN price_cents INT NOT NULL DEFAULT 0;
UPDATE plans SET price_cents = LEAST(price_monthly, 2147483647);
ALTER TABLE plans
    DROP CONSTRAINT plans_default_not_archived,
    DROP COLUMN name_zh, DROP COLUMN description_en, DROP COLUMN description_zh,
    DROP COLUMN max_hostnames_per_cluster, DROP COLUMN ingress_allowed, DROP COLUMN currency,
    DROP COLUMN price_monthly, DROP COLUMN price_yearly, DROP COLUMN public, DROP COLUMN sort_order,
    DROP COLUMN archived_at, DROP COLUMN updated_at;
