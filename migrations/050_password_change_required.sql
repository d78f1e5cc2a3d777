-- A password the user did not choose (the one `kubebyon admin create`
-- prints) must be replaced at the first sign-in (issue 35): until then
-- every page leads to the password form.
ALTER TABLE users ADD COLUMN password_change_required BOOLEAN NOT NULL DEFAULT FALSE;

---- create above / drop below ----

ALTER TABLE users DROP COLUMN password_change_required;
