-- A period is on sale only at a price the admin set (issue 35). An empty
-- price used to be stored as 0, and a paid plan was then free for the
-- period left empty. Now NULL means the period is not offered; a price is
-- above 0; a plan that costs nothing says so (free) and has no prices.
ALTER TABLE plans
    ADD COLUMN free BOOLEAN NOT NULL DEFAULT FALSE,
    ALTER COLUMN price_monthly DROP NOT NULL,
    ALTER COLUMN price_monthly DROP DEFAULT,
    ALTER COLUMN price_yearly DROP NOT NULL,
    ALTER COLUMN price_yearly DROP DEFAULT;

UPDATE plans SET free = TRUE, price_monthly = NULL, price_yearly = NULL
WHERE price_monthly = 0 AND price_yearly = 0;
UPDATE plans SET price_monthly = NULLIF(price_monthly, 0), price_yearly = NULLIF(price_yearly, 0)
WHERE NOT free;

ALTER TABLE plans
    ADD CONSTRAINT plans_prices_above_zero CHECK (coalesce(price_monthly, 1) > 0 AND coalesce(price_yearly, 1) > 0),
    ADD CONSTRAINT plans_free_has_no_price CHECK (NOT free OR (price_monthly IS NULL AND price_yearly IS NULL));

---- create above / drop below ----

ALTER TABLE plans DROP CONSTRAINT plans_prices_above_zero, DROP CONSTRAINT plans_free_has_no_price;
UPDATE plans SET price_monthly = coalesce(price_monthly, 0), price_yearly = coalesce(price_yearly, 0);
ALTER TABLE plans
    ALTER COLUMN price_monthly SET NOT NULL,
    ALTER COLUMN price_monthly SET DEFAULT 0,
    ALTER COLUMN price_yearly SET NOT NULL,
    ALTER COLUMN price_yearly SET DEFAULT 0,
    DROP COLUMN free;
